package firewall

import (
	"testing"

	"github.com/sandgate/sandgate/internal/proctest"
)

// TestMain fails the run when a test leaves a process (iptables in a test's network namespace) or a goroutine
// behind.
func TestMain(m *testing.M) { proctest.Main(m) }
