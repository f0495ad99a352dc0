package sandbox

import "time"

// Fixed names and limits of CONTRACT §0. Every backend and the executor use
// these, so a name never drifts between the part that creates a thing and
// the part that finds it again.
const (
	// DefaultWorkdir is where commands run when Spec.Workdir is empty. It is
	// resolved before any adoption comparison.
	DefaultWorkdir = "/workspace"
	// MaxOutputBytes is kept per stream (stdout, stderr) of one exec.
	MaxOutputBytes = 1 << 20
	// MaxFileBytes is the ReadFile cap; a file of exactly this size reads whole.
	MaxFileBytes = 4 << 20
	// TempPrefix starts the base name of every temporary write file.
	TempPrefix = ".sandgate-write-"
	// LabelSession is the ownership label carried by every container, pod and
	// gate, with the session id verbatim as its value.
	LabelSession = "dev.sandgate.session"

	// ProvisionReadyTimeout bounds the Kubernetes readiness wait (C-PROV-8).
	ProvisionReadyTimeout = 2 * time.Minute
)

// DockerName is the Docker container name of the session's sandbox.
func DockerName(sid string) string { return "sandgate-" + sid }

// DockerGateName is the Docker container name of the session's gate.
func DockerGateName(sid string) string { return "sandgate-gate-" + sid }

// PodName is the Kubernetes pod name of the session's sandbox: the session id
// lower-cased with "_" replaced by "-", so it is a valid DNS label.
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
