package executor

import (
	"testing"

	"github.com/sandgate/sandgate/internal/proctest"
)

// TestMain fails the run when a test leaves a goroutine behind: the reaper
// loop, a debounced activity write or a lock waiter that outlives its
// service.
func TestMain(m *testing.M) { proctest.Main(m) }
