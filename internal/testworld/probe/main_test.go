package main

import (
	"testing"

	"github.com/sandgate/sandgate/internal/proctest"
)

// TestMain fails the run when a test leaves a goroutine behind: a server
// or a relay the probe started.
func TestMain(m *testing.M) { proctest.Main(m) }
