package cli

import (
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/sandbox"
)

func TestExec(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name           string
		args           []string
		result         sandbox.ExecResult
		code           int
		stdout, stderr string
		sent           sandbox.ExecRequest
	}{
		{
			name:   "success",
			args:   []string{"exec", "s1", "--", "echo", "hi", "&&", "echo", "oops", ">&2"},
			result: sandbox.ExecResult{Stdout: "hi\n", Stderr: "oops\n"},
			stdout: "hi\n", stderr: "oops\n",
			sent: sandbox.ExecRequest{Command: "echo hi && echo oops >&2"},
		},
		{
			name:   "one word keeps its shell syntax",
			args:   []string{"exec", "--timeout", "30s", "s1", "--", "make && make test"},
			result: sandbox.ExecResult{ExitCode: 3, Stdout: "out", Stderr: "err"},
			code:   3, stdout: "out", stderr: "err",
			sent: sandbox.ExecRequest{Command: "make && make test", Timeout: 30 * time.Second},
		},
		{
			name:   "timeout",
			args:   []string{"exec", "s1", "--timeout", "2s", "--", "sleep", "9"},
			result: sandbox.ExecResult{TimedOut: true, ExitCode: 137, Stdout: "partial"},
			code:   ExitTimeout, stdout: "partial",
			stderr: "executor exec: the command timed out after 2s\n",
			sent:   sandbox.ExecRequest{Command: "sleep 9", Timeout: 2 * time.Second},
		},
		{
			name:   "timeout of the server's",
			args:   []string{"exec", "s1", "--", "sleep", "9"},
			result: sandbox.ExecResult{TimedOut: true},
			code:   ExitTimeout,
			stderr: "executor exec: the command timed out\n",
			sent:   sandbox.ExecRequest{Command: "sleep 9"},
		},
		{
			name:   "truncated",
			args:   []string{"exec", "s1", "--", "yes"},
			result: sandbox.ExecResult{Truncated: true, Stdout: "y\ny\n"},
			stdout: "y\ny\n",
			stderr: "executor exec: the output was truncated by the executor\n",
			sent:   sandbox.ExecRequest{Command: "yes"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			h.svc.ExecResult = tc.result
			r := h.run(tc.args...)
			require.Equal(t, tc.code, r.code)
			require.Equal(t, tc.stdout, r.stdout)
			require.Equal(t, tc.stderr, r.stderr)
			require.Equal(t, tc.sent, h.svc.ExecRequest())
		})
	}
}

func TestCommandExit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		res  sandbox.ExecResult
		want int
	}{
		{sandbox.ExecResult{}, ExitOK},
		{sandbox.ExecResult{ExitCode: 1}, 1},
		{sandbox.ExecResult{ExitCode: 255}, 255},
		{sandbox.ExecResult{ExitCode: 256}, ExitFailure},
		{sandbox.ExecResult{ExitCode: -1}, ExitFailure},
		{sandbox.ExecResult{ExitCode: 0, TimedOut: true}, ExitTimeout},
		{sandbox.ExecResult{ExitCode: 124}, 124},
	} {
		require.Equal(t, tc.want, exitCode(io.Discard, "exec", commandExit(tc.res)), "%+v", tc.res)
	}
}

func TestExecJSON(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.svc.ExecResult = sandbox.ExecResult{Stdout: "a", Stderr: "b", ExitCode: 7, Truncated: true}
	r := h.run("exec", "s1", "--json", "--", "false")
	require.Equal(t, 7, r.code, "--json exits with the command's code too")
	require.Empty(t, r.stderr)
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &got))
	require.Equal(t, map[string]any{"stdout": "a", "stderr": "b", "exit_code": float64(7), "timed_out": false, "truncated": true}, got)
}

func TestExecUsageErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"exec", "s1"}, "want SESSION -- COMMAND..."},
		{[]string{"exec"}, "want SESSION -- COMMAND..."},
		{[]string{"exec", "S!", "--", "true"}, "session: invalid id"},
		{[]string{"exec", "s1", "--timeout", "soon", "--", "true"}, `invalid value "soon" for flag -timeout`},
		{[]string{"exec", "s1", "--timeout", "-1s", "--", "true"}, "--timeout -1s: must not be negative"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			r := h.run(tc.args...)
			require.Equal(t, ExitUsage, r.code)
			require.Contains(t, r.stderr, "executor exec: "+tc.want)
			require.Empty(t, h.svc.Calls())
		})
	}
}
