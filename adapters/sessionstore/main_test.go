package sessionstore

import (
	"testing"

	"github.com/sandgate/sandgate/internal/proctest"
)

// TestMain fails the run when a test leaves a goroutine (or a process)
// behind: a stream, a watcher or a connection that outlives its call.
func TestMain(m *testing.M) { proctest.Main(m) }
