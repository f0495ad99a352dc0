package kubernetes

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/sandgate/sandgate/internal/proctest"
)

// TestMain fails the run when a test leaves a process (the host's bash running the relay and the wrapper) or a goroutine
// behind. client-go keeps one HTTP/2 connection per API server in its process-wide transport cache (tlsCache), idle
// until the process ends: its read loop is that cache, not a test's leak.
func TestMain(m *testing.M) {
	proctest.Main(m, goleak.IgnoreAnyFunction("golang.org/x/net/http2.(*ClientConn).readLoop"))
}
