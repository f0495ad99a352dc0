package porttest

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/ports"
)

// The capabilities the rows below depend on, with the CONTRACT clause that
// makes each backend-specific (docs/DIVERGENCES.md says what Kubernetes does
// instead).
var (
	clampsCPU = capability{"ClampsCPU", func(c Capabilities) bool { return c.ClampsCPU },
		"C-HARD-1 (CPUMillis is clamped to the endpoint's CPUs; Kubernetes passes the limit through)", false}
	enforcesPids = capability{"EnforcesPidsLimit", func(c Capabilities) bool { return c.EnforcesPidsLimit },
		"C-HARD-2 (PidsLimit caps the sandbox's processes; Kubernetes ignores it)", false}
	runsInit = capability{"RunsInit", func(c Capabilities) bool { return c.RunsInit },
		"C-PROV-9 (an init process is PID 1; on Kubernetes the keep-alive is)", false}
	stopsSandboxes = capability{"StopsSandboxes", func(c Capabilities) bool { return c.StopsSandboxes },
		"C-PROV-6, C-ATT-1, C-OWN-1 (a stopped sandbox is kept; a pod cannot be stopped)", false}
	exportsStopped = capability{"ExportsStopped and StopsSandboxes",
		func(c Capabilities) bool { return c.ExportsStopped && c.StopsSandboxes },
		"C-EXP-1 (export from a stopped sandbox; Kubernetes needs a running pod)", false}
)

// capRows: the rows only some backends run, each Docker-only row followed
// by its counterpart where DIVERGENCES documents one. The stopped-sandbox
// rows have none: a pod cannot be stopped, so there is no state to observe.
func capRows() []capRow {
	return []capRow{
		{with(clampsCPU), row{"C-HARD-1/cpu-clamped-to-endpoint", func(t *testing.T, s *suite) {
			sb := s.provision(t, sandbox.Spec{Hardening: sandbox.Hardening{CPUMillis: hugeCPUMillis}})
			quota, period := cpuQuota(t, sb)
			ncpu, err := strconv.ParseInt(strings.TrimSpace(sh(t, sb, "getconf _NPROCESSORS_ONLN")), 10, 64)
			require.NoError(t, err)
			require.Positive(t, quota)
			require.LessOrEqual(t, quota, ncpu*period, "the quota must be clamped to the endpoint's CPUs")
		}}},
		{without(clampsCPU), row{"C-HARD-1/cpu-limit-passed-through", func(t *testing.T, s *suite) {
			// The limit is passed through, so only a small request can let
			// the sandbox be placed at all: provisioning must succeed and
			// the sandbox run (the limit itself is the adapter's unit test).
			sb := s.provision(t, sandbox.Spec{Hardening: sandbox.Hardening{CPUMillis: hugeCPUMillis}})
			require.Equal(t, "ok\n", sh(t, sb, "echo ok"))
		}}},
		{with(enforcesPids), row{"C-HARD-2/pids-limit", func(t *testing.T, s *suite) {
			sb := s.provision(t, sandbox.Spec{Hardening: sandbox.Hardening{PidsLimit: 64}})
			if s.h.Caps.PidsLimitOnHost {
				pidsLimitOnHost(t, sb, 64)
				return
			}
			require.Equal(t, "64\n", sh(t, sb, cgroupFile("pids.max", "pids/pids.max")))
			n, why := forkLoop(t, sb, 200)
			require.Equal(t, "EAGAIN", why, "the fork loop must hit the limit")
			require.Less(t, n, 64)
		}}},
		{without(enforcesPids), row{"C-HARD-2/pids-limit-ignored", func(t *testing.T, s *suite) {
			sb := s.provision(t, sandbox.Spec{Hardening: sandbox.Hardening{PidsLimit: 16}})
			n, why := forkLoop(t, sb, 64)
			require.Equal(t, "unbounded", why, "a limit this backend ignores stopped the fork loop")
			require.Equal(t, 64, n)
		}}},
		{with(runsInit), row{"C-PROV-9/init-is-pid-1", func(t *testing.T, s *suite) {
			p := keepAlive(t, s.fresh(t), sandbox.DefaultWorkdir)
			require.NotEqual(t, 1, p.pid, "PID 1 must be an init, not the keep-alive")
			require.Equal(t, 1, p.ppid, "the keep-alive must be the init's child")
		}}},
		{without(runsInit), row{"C-PROV-9/keepalive-is-pid-1", func(t *testing.T, s *suite) {
			require.Equal(t, 1, keepAlive(t, s.fresh(t), sandbox.DefaultWorkdir).pid,
				"without an init the keep-alive is PID 1 (it reaps the orphans: C-PROV-9/zombies-reaped)")
		}}},
		{with(stopsSandboxes), row{"C-PROV-6/stopped-sandbox-restarted-with-files", func(t *testing.T, s *suite) {
			spec := s.spec(t)
			first := s.provision(t, spec)
			sh(t, first, "echo survived > /workspace/kept")
			s.stop(t, spec.SessionID)
			second := s.provision(t, spec)
			require.Equal(t, first.ID(), second.ID(), "the stopped sandbox must be adopted, not replaced")
			require.Equal(t, "survived\n", string(readBack(t, second, "/workspace/kept")))
		}}},
		{with(stopsSandboxes), row{"C-ATT-1/stopped-stays-stopped", func(t *testing.T, s *suite) {
			spec := s.spec(t)
			s.provision(t, spec)
			s.stop(t, spec.SessionID)
			for range 2 { // the second answer proves the first did not start it
				sb, err := s.h.Provider.Attach(ctx(t), spec.SessionID)
				requireNotFound(t, err, "attach to a stopped sandbox")
				requireNoHandle(t, sb, "attach")
			}
			require.Contains(t, s.owned(t), spec.SessionID, "a stopped sandbox is still owned")
		}}},
		{with(stopsSandboxes), row{"C-OWN-1/stopped-member", func(t *testing.T, s *suite) {
			spec := s.spec(t)
			s.provision(t, spec)
			s.stop(t, spec.SessionID)
			require.Contains(t, s.owned(t), spec.SessionID)
		}}},
		{with(exportsStopped), row{"C-EXP-1/stopped-sandbox", func(t *testing.T, s *suite) {
			spec := s.spec(t)
			sb := s.provision(t, spec)
			require.NoError(t, sb.WriteFile(ctx(t), "/workspace/out/result", []byte("done")))
			s.stop(t, spec.SessionID)
			m := exportMembers(t, s, spec.SessionID, "/workspace/out")
			require.Equal(t, "done", m["out/result"].data)
		}}},
	}
}

// hugeCPUMillis is far above any endpoint's CPUs (about a thousand).
const hugeCPUMillis = 1 << 20

// forkLoop forks up to n children that sleep, then kills and reaps them. It
// returns how many forks succeeded and why the loop stopped: "EAGAIN" (or
// the errno text) when a fork failed, "unbounded" when all n succeeded.
func forkLoop(t *testing.T, sb ports.Sandbox, n int) (int, string) {
	t.Helper()
	return forkLoopResult(t, sh(t, sb, forkLoopScript(n)))
}

// forkLoopScript forks up to n sleepers, printing how many it made and
// why it stopped (EAGAIN, ENOMEM, another errno, or unbounded), then
// kills them.
func forkLoopScript(n int) string {
	return `perl -e '
my @k;
for (1..` + strconv.Itoa(n) + `) {
	my $p = fork();
	if (!defined $p) { print scalar(@k), " ", ($!{EAGAIN} ? "EAGAIN" : $!{ENOMEM} ? "ENOMEM" : "$!"), "\n"; last }
	if ($p == 0) { sleep 60; exit 0 }
	push @k, $p;
}
print scalar(@k), " unbounded\n" if @k == ` + strconv.Itoa(n) + `;
kill "KILL", @k; waitpid($_, 0) for @k;'`
}

// pidsLimitOnHost: in a sandbox whose cap binds on its host tasks (gVisor),
// a fork loop far past the cap either meets it (EAGAIN, ENOMEM) with room
// for at least half of it made, or ends the whole sandbox — the Sentry
// then cannot make the threads it needs either — which the next call
// reports as gone. Never unbounded.
func pidsLimitOnHost(t *testing.T, sb ports.Sandbox, limit int) {
	t.Helper()
	res, err := sb.Exec(ctx(t), sandbox.ExecRequest{Command: forkLoopScript(8 * limit), Timeout: time.Minute})
	if err != nil || res.ExitCode != 0 {
		require.Eventually(t, func() bool {
			_, err := sb.Exec(ctx(t), sandbox.ExecRequest{Command: "true"})
			return errors.Is(err, sandbox.ErrNotFound)
		}, 10*time.Second, 100*time.Millisecond, "a fork loop that failed (%v, %+v) must have ended the sandbox", err, res)
		return
	}
	n, why := forkLoopResult(t, res.Stdout)
	require.Contains(t, []string{"EAGAIN", "ENOMEM"}, why, "the fork loop must hit the limit (%d forked)", n)
	require.GreaterOrEqual(t, n, limit/2, "the limit leaves room for the sandbox's processes")
}

func forkLoopResult(t *testing.T, out string) (int, string) {
	t.Helper()
	f := strings.Fields(out)
	require.Len(t, f, 2, "fork loop output %q", out)
	forked, err := strconv.Atoi(f[0])
	require.NoError(t, err, "fork loop output %q", out)
	return forked, f[1]
}

// stop stops the session's sandbox through the harness hook.
func (s *suite) stop(t *testing.T, id domain.ID) {
	t.Helper()
	require.NoError(t, s.h.Stop(ctx(t), id), "harness: stop %s", id)
}
