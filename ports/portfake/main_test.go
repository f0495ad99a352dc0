package portfake_test

import (
	"testing"

	"github.com/sandgate/sandgate/internal/proctest"
)

// TestMain fails the run when a test leaves a goroutine behind: a call held
// at a Gate that was never released.
func TestMain(m *testing.M) { proctest.Main(m) }
