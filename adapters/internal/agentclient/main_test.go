package agentclient

import (
	"testing"

	"github.com/sandgate/sandgate/internal/proctest"
)

// TestMain fails the run when a test leaves a goroutine behind: a session,
// a stream or an event reader that outlives its call.
func TestMain(m *testing.M) { proctest.Main(m) }
