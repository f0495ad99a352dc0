package gate

import (
	"testing"

	"github.com/sandgate/sandgate/internal/proctest"
)

// The loops and the proxy's Serve run on goroutines of their own: none may
// outlive Serve.
func TestMain(m *testing.M) { proctest.Main(m) }
