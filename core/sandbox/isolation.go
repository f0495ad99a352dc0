package sandbox

import (
	"errors"
	"fmt"
)

// Isolation is the boundary between a sandbox's processes and the host's
// kernel, chosen per session.
type Isolation string

const (
	// IsolationRunc: a container on the host's kernel (namespaces, cgroups,
	// seccomp, dropped capabilities); a kernel bug a command exploits is the
	// host's.
	IsolationRunc Isolation = "runc"
	// IsolationGVisor: the container runs on gVisor's user-space kernel
	// (runsc), which serves its system calls; the host kernel sees only the
	// Sentry's narrow set.
	IsolationGVisor Isolation = "gvisor"
)

// ErrIsolationUnavailable: the backend has no runtime for the isolation
// asked for (no runsc registered with the Docker engine, no RuntimeClass in
// the cluster), or cannot give it with the rest of the spec (a gated
// sandbox where the gate cannot be made airtight under it).
var ErrIsolationUnavailable = errors.New("isolation unavailable")

// ParseIsolation parses a session's isolation choice; the empty string is
// the executor's default, resolved by the caller.
func ParseIsolation(s string) (Isolation, error) {
	switch i := Isolation(s); i {
	case "", IsolationRunc, IsolationGVisor:
		return i, nil
	}
	return "", fmt.Errorf("isolation %q: want %q or %q", s, IsolationRunc, IsolationGVisor)
}
