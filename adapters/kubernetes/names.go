package kubernetes

import "time"

// PodName is the Kubernetes pod name of the session's sandbox: the session id
// lower-cased with "_" replaced by "-", so it is a valid DNS label. It is
// derived from the session id alone, so any executor finds a session's pod
// again from the session.
func PodName(sid string) string {
	b := []byte("sandgate-" + sid)
	for i, c := range b {
		switch {
		case c >= 'A' && c <= 'Z':
			b[i] = c + 'a' - 'A'
		case c == '_':
			b[i] = '-'
		}
	}
	return string(b)
}

// defaultReadyTimeout is Options.ReadyTimeout's default: how long Provision
// waits for a pod to become ready (C-PROV-8).
const defaultReadyTimeout = 2 * time.Minute
