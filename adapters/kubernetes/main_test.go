package kubernetes

import (
	"testing"

	"github.com/sandgate/sandgate/internal/proctest"
)

// TestMain fails the run when a test leaves a process (the host's bash running the relay and the wrapper) or a goroutine
// behind.
func TestMain(m *testing.M) { proctest.Main(m) }
