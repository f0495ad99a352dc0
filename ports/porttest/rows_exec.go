package porttest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/ports"
)

// returnGrace is how long after its whole-second deadline an exec may take
// to return (C-EXEC-3), and measureSlack what the row's own clock adds (it
// starts before the request is sent and stops after the answer is read).
const (
	returnGrace  = 2 * time.Second
	measureSlack = 500 * time.Millisecond
)

// outputDeadline is the deadline of the rows that require what a command
// printed first to be in its timed-out result. The deadline runs from the
// call (C-EXEC-3), so the time a loaded engine takes to start the exec
// comes out of the command's: in CI, beside the e2e load test, a Docker
// exec under a 1 s deadline had not printed its first line when the call's
// bound came (deadline + ReturnGrace, which it met). A 5 s deadline leaves
// the engine 6 s to start the command; the rows run four at once, so it
// costs the suite little.
const outputDeadline = 5 * time.Second

// execRows: Exec (CONTRACT §5), the ordinary cases.
func execRows() []row {
	return []row{
		{"C-EXEC-1/streams-exit-code-workdir", func(t *testing.T, s *suite) {
			sb := s.fresh(t)
			res := exec(t, sb, sandbox.ExecRequest{Command: "echo out; echo err >&2; pwd; exit 3"})
			require.Equal(t, "out\n/workspace\n", res.Stdout)
			require.Equal(t, "err\n", res.Stderr)
			require.Equal(t, 3, res.ExitCode)
			require.False(t, res.TimedOut)
			require.False(t, res.Truncated)
		}},
		{"C-EXEC-1/bash-and-custom-workdir", func(t *testing.T, s *suite) {
			sb := s.provision(t, sandbox.Spec{Workdir: "/opt/my work"})
			res := exec(t, sb, sandbox.ExecRequest{Command: `[[ -n "$BASH_VERSION" ]] && pwd`, Timeout: 10 * time.Second})
			require.Equal(t, 0, res.ExitCode, res.Stderr)
			require.Equal(t, "/opt/my work\n", res.Stdout)
		}},
		{"C-EXEC-1/binary-output-verbatim", func(t *testing.T, s *suite) {
			sb := s.fresh(t)
			res := exec(t, sb, sandbox.ExecRequest{Command: octalPrintf(allBytes()) + `; printf '\000\377' >&2`})
			require.Equal(t, 0, res.ExitCode, res.Stderr)
			require.Equal(t, string(allBytes()), res.Stdout)
			require.Equal(t, "\x00\xff", res.Stderr)
		}},
		{"C-EXEC-2/stdout-truncated-at-cap", func(t *testing.T, s *suite) {
			truncation(t, s, "stdout")
		}},
		{"C-EXEC-2/stderr-truncated-at-cap", func(t *testing.T, s *suite) {
			truncation(t, s, "stderr")
		}},
		{"C-EXEC-2/exactly-at-cap-not-truncated", func(t *testing.T, s *suite) {
			sb := s.fresh(t)
			res := exec(t, sb, sandbox.ExecRequest{
				Command: fmt.Sprintf("head -c %d /dev/zero | tr '\\0' a; head -c %d /dev/zero | tr '\\0' b >&2", sandbox.MaxOutputBytes, sandbox.MaxOutputBytes),
				Timeout: 30 * time.Second,
			})
			require.Equal(t, 0, res.ExitCode)
			require.Len(t, res.Stdout, sandbox.MaxOutputBytes)
			require.Len(t, res.Stderr, sandbox.MaxOutputBytes)
			require.False(t, res.Truncated)
		}},
		{"C-EXEC-3/timeout-kills-at-deadline", func(t *testing.T, s *suite) {
			sb := s.fresh(t)
			res, took := timed(t, sb, sandbox.ExecRequest{Command: "echo started; sleep 30; echo never", Timeout: outputDeadline})
			require.True(t, res.TimedOut)
			require.Equal(t, "started\n", res.Stdout)
			requireReturnedBy(t, took, outputDeadline)
			require.GreaterOrEqual(t, took, outputDeadline, "killed before the deadline")
		}},
		{"C-EXEC-3/timeout-rounds-up", func(t *testing.T, s *suite) {
			sb := s.fresh(t)
			// 1.001 s rounds up to 2 s: the command is still alive at 1.5 s
			// (its own clock), and the kill cannot come before 2 s. Both
			// bounds hold however loaded the machine is; a margin between a
			// short command and its deadline would not.
			res, took := timed(t, sb, sandbox.ExecRequest{Command: "sleep 1.5; echo past; sleep 30", Timeout: 1001 * time.Millisecond})
			require.True(t, res.TimedOut)
			require.Equal(t, "past\n", res.Stdout, "killed before the rounded-up deadline")
			require.GreaterOrEqual(t, took, 2*time.Second)
			requireReturnedBy(t, took, 2*time.Second)
			// And 1 ms rounds up to 1 s, still a deadline.
			res, took = timed(t, sb, sandbox.ExecRequest{Command: "sleep 30", Timeout: time.Millisecond})
			require.True(t, res.TimedOut)
			require.GreaterOrEqual(t, took, time.Second)
			requireReturnedBy(t, took, time.Second)
		}},
		{"C-EXEC-3/group-kill-includes-grandchildren", func(t *testing.T, s *suite) {
			sb := s.fresh(t)
			cmd := `bash -c 'sleep 4711 & echo $! > /tmp/grandchild; wait' & sleep 4712`
			res, took := timed(t, sb, sandbox.ExecRequest{Command: cmd, Timeout: time.Second})
			require.True(t, res.TimedOut)
			requireReturnedBy(t, took, time.Second)
			eventually(t, 3*time.Second, func() bool {
				return liveProcs(t, sb, "sleep 4711") == 0 && liveProcs(t, sb, "sleep 4712") == 0
			}, "the command's process group survived its deadline")
			require.Equal(t, "usable\n", sh(t, sb, "echo usable"), "the sandbox must stay usable")
		}},
		{"C-EXEC-3/zero-timeout-no-limit", func(t *testing.T, s *suite) {
			sb := s.fresh(t)
			res := exec(t, sb, sandbox.ExecRequest{Command: "sleep 2.5; echo finished"})
			require.False(t, res.TimedOut)
			require.Equal(t, "finished\n", res.Stdout)
		}},
		{"C-EXEC-5/cancelled-context", func(t *testing.T, s *suite) {
			sb := s.fresh(t)
			c, cancel := context.WithCancel(ctx(t))
			time.AfterFunc(500*time.Millisecond, cancel)
			start := time.Now()
			_, err := sb.Exec(c, sandbox.ExecRequest{Command: "sleep 4731 & sleep 4731"})
			took := time.Since(start)
			require.ErrorIs(t, err, context.Canceled, "a cancelled context is an error, not a result")
			require.Less(t, took, 3*time.Second, "a cancelled exec must return promptly")
			require.Equal(t, "ok\n", sh(t, sb, "echo ok"))
			// Issue 11 item 5: a caller that goes away takes its command along —
			// the command, what it started, and our own wrapper.
			eventually(t, 3*time.Second, func() bool { return liveProcs(t, sb, "sleep 4731") == 0 },
				"the cancelled command still runs")
		}},
		{"C-EXEC-5/cancelled-context-with-timeout", func(t *testing.T, s *suite) {
			sb := s.fresh(t)
			c, cancel := context.WithTimeout(ctx(t), 500*time.Millisecond)
			defer cancel()
			start := time.Now()
			_, err := sb.Exec(c, sandbox.ExecRequest{Command: "sleep 4732", Timeout: 20 * time.Second})
			require.ErrorIs(t, err, context.DeadlineExceeded)
			require.Less(t, time.Since(start), 3*time.Second)
			// Its watchdog too: nothing waits for the 20 s deadline.
			eventually(t, 3*time.Second, func() bool { return liveProcs(t, sb, "sleep 4732") == 0 },
				"the cancelled command or its watchdog still runs")
		}},
		{"C-EXEC-5/already-cancelled", func(t *testing.T, s *suite) {
			sb := s.fresh(t)
			c, cancel := context.WithCancel(ctx(t))
			cancel()
			_, err := sb.Exec(c, sandbox.ExecRequest{Command: "touch /workspace/ran"})
			require.ErrorIs(t, err, context.Canceled)
		}},
		{"C-EXEC-5/destroyed-sandbox", func(t *testing.T, s *suite) {
			sb := s.fresh(t)
			require.NoError(t, sb.Destroy(ctx(t)))
			_, err := sb.Exec(ctx(t), sandbox.ExecRequest{Command: "true"})
			requireNotFound(t, err, "exec on a destroyed sandbox")
		}},
	}
}

// truncation checks C-EXEC-2 for one stream: the first MaxOutputBytes kept,
// Truncated set, the other stream intact, the exit code and the command's
// completion kept.
func truncation(t *testing.T, s *suite, stream string) {
	t.Helper()
	sb := s.fresh(t)
	redir, other := "", ">&2"
	if stream == "stderr" {
		redir, other = ">&2", ""
	}
	cmd := fmt.Sprintf(`{ printf 'HEAD'; head -c %d /dev/zero | tr '\0' x; printf 'TAIL'; } %s
echo intact %s
touch /workspace/completed
exit 7`, 3*sandbox.MaxOutputBytes, redir, other)
	res := exec(t, sb, sandbox.ExecRequest{Command: cmd, Timeout: 60 * time.Second})
	got, rest := res.Stdout, res.Stderr
	if stream == "stderr" {
		got, rest = res.Stderr, res.Stdout
	}
	require.True(t, res.Truncated)
	require.False(t, res.TimedOut)
	require.Equal(t, 7, res.ExitCode, "the command's own exit code")
	require.Len(t, got, sandbox.MaxOutputBytes, "exactly the cap is kept")
	require.True(t, strings.HasPrefix(got, "HEADxxx"), "the first bytes are kept")
	require.Equal(t, "intact\n", rest, "the other stream is intact")
	require.True(t, exists(t, sb, "/workspace/completed"), "the command must run to completion")
}

// timed runs req and returns the result and how long the call took.
func timed(t *testing.T, sb ports.Sandbox, req sandbox.ExecRequest) (sandbox.ExecResult, time.Duration) {
	t.Helper()
	start := time.Now()
	res, err := sb.Exec(ctx(t), req)
	took := time.Since(start)
	if err != nil {
		// Whether the sandbox still answers tells a wrong verdict from a
		// sandbox that really died under the command.
		_, after := sb.Exec(ctx(t), sandbox.ExecRequest{Command: "true", Timeout: 30 * time.Second})
		require.NoError(t, err, "exec %q failed after %v; the sandbox answers a later exec with err=%v", req.Command, took, after)
	}
	return res, took
}

// requireReturnedBy requires the call to have returned by deadline +
// returnGrace (C-EXEC-3).
func requireReturnedBy(t *testing.T, took, deadline time.Duration) {
	t.Helper()
	require.LessOrEqual(t, took, deadline+returnGrace+measureSlack, "returned %v after the %v deadline's grace", took-deadline, deadline)
}

// allBytes is every byte value once, in order.
func allBytes() []byte {
	b := make([]byte, 256)
	for i := range b {
		b[i] = byte(i)
	}
	return b
}
