package porttest

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/ports"
)

// procRows: the procs of ports.ProcHost (C-PROC-1, issue 14), which the
// agent carries; a backend's engine-exec path cannot own a process past
// its call.
func procRows() []capRow {
	return []capRow{
		{with(viaAgent), row{"C-PROC-1/background-output-stdin-pty", func(t *testing.T, s *suite) {
			sb := s.fresh(t)
			c := ctx(t)
			bg, err := sb.StartProc(c, sandbox.ProcStart{Command: "pwd; echo err >&2; sleep 0.5; echo done; exit 4", Tag: "bg"})
			require.NoError(t, err)
			require.Equal(t, sandbox.ProcRunning, bg.State)
			end, err := sb.WaitProc(c, bg.ID)
			require.NoError(t, err)
			require.Equal(t, 4, end.ExitCode)
			require.Equal(t, "bg", end.Tag)
			require.Equal(t, "/workspace\ndone\n", procText(t, sb, bg.ID, sandbox.ProcOutputQuery{Stream: sandbox.StreamStdout}),
				"it runs in the workdir")
			require.Equal(t, "done\n", procText(t, sb, bg.ID, sandbox.ProcOutputQuery{Stream: sandbox.StreamStdout, From: 11}))
			require.Equal(t, "err\n", procText(t, sb, bg.ID, sandbox.ProcOutputQuery{Stream: sandbox.StreamStderr}))
			require.ErrorIs(t, sb.SignalProc(c, bg.ID, "TERM"), sandbox.ErrProcExited)

			cat, err := sb.StartProc(c, sandbox.ProcStart{Command: "tr a-z A-Z"})
			require.NoError(t, err)
			require.NoError(t, sb.ProcStdin(c, cat.ID, strings.NewReader("piped\n"), true))
			_, err = sb.WaitProc(c, cat.ID)
			require.NoError(t, err)
			require.Equal(t, "PIPED\n", procText(t, sb, cat.ID, sandbox.ProcOutputQuery{}))

			tty, err := sb.StartProc(c, sandbox.ProcStart{Command: "read -r line; tty; stty size; echo \"got $line\"", TTY: true, Cols: 90, Rows: 20})
			require.NoError(t, err)
			require.NoError(t, sb.ResizeProc(c, tty.ID, 100, 30))
			require.NoError(t, sb.ProcStdin(c, tty.ID, strings.NewReader("typed\n"), false))
			_, err = sb.WaitProc(c, tty.ID)
			require.NoError(t, err)
			screen := procText(t, sb, tty.ID, sandbox.ProcOutputQuery{})
			require.Regexp(t, `/dev/pts/\d+\r\n30 100\r\ngot typed\r\n`, screen)

			list, err := sb.Procs(c)
			require.NoError(t, err)
			require.Len(t, list, 3)
			for _, p := range list {
				require.NoError(t, sb.RemoveProc(c, p.ID))
			}
			_, err = sb.Proc(c, bg.ID)
			require.ErrorIs(t, err, sandbox.ErrProcNotFound)
		}}},
		{with(viaAgent), row{"C-PROC-1/outlives-the-agent-stream", func(t *testing.T, s *suite) {
			// An executor restart as the sandbox sees it: the provider that
			// started the proc closes its agent streams, and another one,
			// built alike (the same agent key), finds the proc running with
			// its output from an offset.
			c := ctx(t)
			spec := sandbox.Spec{SessionID: s.sid(t), Image: s.h.Image}
			first := s.h.WithTokens(nil)
			sb, err := first.Provision(c, spec)
			require.NoError(t, err)
			bg, err := sb.StartProc(c, sandbox.ProcStart{Command: "echo one; echo two; exec sleep 60"})
			require.NoError(t, err)
			require.Eventually(t, func() bool {
				return procText(t, sb, bg.ID, sandbox.ProcOutputQuery{Stream: sandbox.StreamStdout}) == "one\ntwo\n"
			}, 10*time.Second, 20*time.Millisecond)
			closer, ok := first.(io.Closer)
			require.True(t, ok, "a provider that holds agent streams can close them")
			require.NoError(t, closer.Close())

			again, err := s.h.WithTokens(nil).Attach(c, spec.SessionID)
			require.NoError(t, err)
			info, err := again.Proc(c, bg.ID)
			require.NoError(t, err)
			require.Equal(t, sandbox.ProcRunning, info.State)
			require.Equal(t, "two\n", procText(t, again, bg.ID, sandbox.ProcOutputQuery{Stream: sandbox.StreamStdout, From: 4}))
			require.NoError(t, again.RemoveProc(c, bg.ID))
		}}},
		{without(viaAgent), row{"C-PROC-1/no-agent-is-classified", func(t *testing.T, s *suite) {
			sb := s.fresh(t)
			_, err := sb.StartProc(ctx(t), sandbox.ProcStart{Command: "true"})
			require.ErrorIs(t, err, sandbox.ErrNoAgent)
			_, err = sb.Procs(ctx(t))
			require.ErrorIs(t, err, sandbox.ErrNoAgent)
		}}},
	}
}

// procText is what a read of the proc's output with q hands over.
func procText(t *testing.T, sb ports.Sandbox, id string, q sandbox.ProcOutputQuery) string {
	t.Helper()
	var out strings.Builder
	_, err := sb.ProcOutput(ctx(t), id, q, func(ch sandbox.ProcChunk) error {
		out.Write(ch.Data)
		return nil
	})
	require.NoError(t, err)
	return out.String()
}
