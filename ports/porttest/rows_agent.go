package porttest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/agentwire"
	"github.com/sandgate/sandgate/core/sandbox"
)

// The rows of a backend whose operations go through the in-sandbox agent
// (issue 13, docs/SECURITY.md): a command that attacks its agent gets an
// error or TimedOut, never a forged exit code or a success, and the next
// call works. The agent is the command's parent ($PPID): it forks the
// command itself.
var (
	viaAgent = capability{"Agent", func(c Capabilities) bool { return c.Agent },
		"issue 13 (the command's parent is the in-sandbox agent)", true}
	viaAgentPidsCapped = capability{"Agent and EnforcesPidsLimit without PidsLimitOnHost",
		func(c Capabilities) bool { return c.Agent && c.EnforcesPidsLimit && !c.PidsLimitOnHost },
		"issue 13 with C-HARD-2 (the agent's sandbox caps its processes, and lives on at its cap)", true}
)

// agentRows: the adversarial rows of the agent, on every backend with one.
func agentRows() []capRow {
	return []capRow{
		{with(viaAgent), row{"C-EXEC-4/agent-killed-no-result", func(t *testing.T, s *suite) {
			sb := s.fresh(t)
			res, err := sb.Exec(ctx(t), sandbox.ExecRequest{Command: `kill -9 $PPID; sleep 1; echo forged`})
			require.Error(t, err, "a command that killed its agent has no result, got %+v", res)
			require.Equal(t, "again\n", sh(t, sb, "echo again"), "the next call starts a fresh agent")
		}}},
		{with(viaAgent), row{"C-EXEC-4/agent-stopped-times-out", func(t *testing.T, s *suite) {
			sb := s.fresh(t)
			deadline := 2 * time.Second
			start := time.Now()
			res, err := sb.Exec(ctx(t), sandbox.ExecRequest{Command: `kill -STOP $PPID; exit 0`, Timeout: deadline})
			took := time.Since(start)
			require.NoError(t, err)
			require.True(t, res.TimedOut, "a stopped agent cannot report: the provider's clock decides (%+v)", res)
			// The backstop kills the group through the engine first
			// (deadline + 1 s), then returns by deadline + ReturnGrace.
			require.Less(t, took, deadline+sandbox.ReturnGrace+measureSlack+2*time.Second)
			require.Equal(t, "again\n", sh(t, sb, "echo again"), "a stopped agent is abandoned for a fresh one")
		}}},
		{with(viaAgent), row{"C-EXEC-4/agent-memory-and-descriptors-closed", func(t *testing.T, s *suite) {
			sb := s.fresh(t)
			res, err := sb.Exec(ctx(t), sandbox.ExecRequest{Command: `echo forged >/proc/$PPID/fd/1 2>/dev/null && echo wrote
exec 3</proc/$PPID/mem 2>/dev/null && echo opened
grep -q . /proc/$PPID/environ 2>/dev/null && echo environ
exit 7`})
			require.NoError(t, err)
			require.Equal(t, 7, res.ExitCode)
			require.Empty(t, res.Stdout, "the agent is non-dumpable: its fds, memory and environment are closed")
		}}},
		{with(viaAgent), row{"C-EXEC-4/agent-not-replaceable", func(t *testing.T, s *suite) {
			sb := s.fresh(t)
			res, err := sb.Exec(ctx(t), sandbox.ExecRequest{Command: `cp /bin/true ` + agentwire.Binary + ` 2>/dev/null && echo replaced
rm -f ` + agentwire.Binary + ` 2>/dev/null && echo removed
exit 3`})
			require.NoError(t, err)
			require.Equal(t, 3, res.ExitCode)
			require.Empty(t, res.Stdout, "the agent's binary sits on a read-only mount")
			require.Equal(t, "again\n", sh(t, sb, "echo again"))
		}}},
		{with(viaAgentPidsCapped), row{"C-EXEC-4/agent-pids-exhausted-no-forged-success", func(t *testing.T, s *suite) {
			sb := s.provision(t, sandbox.Spec{Hardening: sandbox.Hardening{PidsLimit: 48}})
			// Sleepers take every pid the cap leaves; the call itself
			// returns (they hold no stream).
			_, err := sb.Exec(ctx(t), sandbox.ExecRequest{Command: `for i in $(seq 80); do sleep 60 </dev/null >/dev/null 2>&1 & done 2>/dev/null; exit 0`,
				Timeout: 20 * time.Second})
			require.NoError(t, err)
			// The agent cannot fork the next command: an error, or — if a
			// pid came free — the command's true result; never a success
			// without its output.
			res, err := sb.Exec(ctx(t), sandbox.ExecRequest{Command: "echo ran", Timeout: 10 * time.Second})
			if err == nil && !res.TimedOut {
				require.Equal(t, "ran\n", res.Stdout, "a success must carry the command's output (%+v)", res)
				require.Zero(t, res.ExitCode)
			}
		}}},
	}
}
