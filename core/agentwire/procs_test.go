package agentwire

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestProcPath(t *testing.T) {
	t.Parallel()
	require.Equal(t, "/v1/procs/ab12/output", ProcPath(PathProcOutput, "ab12"))
	require.Equal(t, "/v1/procs/ab12", ProcPath(PathProc, "ab12"))
}
