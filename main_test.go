package sandgate_test

import (
	"testing"

	"github.com/sandgate/sandgate/internal/proctest"
)

// TestMain fails the run when a test leaves a process (go list) or a goroutine
// behind.
func TestMain(m *testing.M) { proctest.Main(m) }
