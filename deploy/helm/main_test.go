package helm

import (
	"testing"

	"github.com/sandgate/sandgate/internal/proctest"
)

// TestMain fails the run when a test leaves a process (helm) or a goroutine
// behind.
func TestMain(m *testing.M) { proctest.Main(m) }
