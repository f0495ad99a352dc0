package executor

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/core/session"
)

// TestProcsThroughTheService: the session's procs reach its sandbox's,
// and malformed input is refused as invalid.
func TestProcsThroughTheService(t *testing.T) {
	t.Parallel()
	e, sid := provisioned(t, session.Request{})
	ctx := context.Background()
	procs := e.svc.Procs(sid)
	p, err := procs.StartProc(ctx, sandbox.ProcStart{Command: "cat"})
	require.NoError(t, err)
	require.NoError(t, procs.ProcStdin(ctx, p.ID, strings.NewReader("x"), true))
	end, err := procs.WaitProc(ctx, p.ID)
	require.NoError(t, err)
	require.Equal(t, sandbox.ProcExited, end.State)
	require.NoError(t, procs.RemoveProc(ctx, p.ID))

	for _, err := range []error{
		procs.SignalProc(ctx, p.ID, "NOPE"),
		procs.ResizeProc(ctx, p.ID, 0, 24),
		procs.RemoveProc(ctx, "../x"),
		func() error { _, err := procs.StartProc(ctx, sandbox.ProcStart{Command: "a\x00b"}); return err }(),
		func() error {
			_, err := procs.ProcOutput(ctx, p.ID, sandbox.ProcOutputQuery{Stream: "stdin"}, nil)
			return err
		}(),
	} {
		require.ErrorIs(t, err, sandbox.ErrInvalidProc)
	}
}
