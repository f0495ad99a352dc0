package agent_test

import (
	"testing"

	"github.com/sandgate/sandgate/internal/proctest"
)

// TestMain fails the run when a test leaves a process (a command, a
// straggler) or a goroutine (a pump) behind.
func TestMain(m *testing.M) { proctest.Main(m) }
