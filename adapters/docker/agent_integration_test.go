//go:build integration

package docker_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/client"
	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/adapters/docker"
	"github.com/sandgate/sandgate/adapters/docker/dockertest"
	"github.com/sandgate/sandgate/core/agentwire"
	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/ports"
)

// agentBox provisions a sandbox of base on a provider with agentImage and
// reaps it at cleanup.
func agentBox(t *testing.T, cli *client.Client, agentImage string) (ports.Sandbox, *docker.Provider) {
	t.Helper()
	base := "debian:bookworm"
	dockertest.RequireImage(t, cli, base)
	p := docker.New(cli, docker.Options{Labels: dockertest.Labels(t, cli), AgentImage: agentImage})
	sid := domain.NewID("ses")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	sb, err := p.Provision(ctx, sandbox.Spec{SessionID: sid, Image: base, Workdir: "/workspace"})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = p.Reap(context.Background(), sid)
		_ = p.Close()
	})
	return sb, p
}

func run(t *testing.T, sb ports.Sandbox, cmd string, timeout time.Duration) (sandbox.ExecResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	return sb.Exec(ctx, sandbox.ExecRequest{Command: cmd, Timeout: timeout})
}

// TestAgentDelivery: with the agent image, commands run under the agent
// (their parent), whose binary is root's, read-only, and whose /proc
// entries are closed to the sandbox's processes (non-dumpable). Without
// the image, the same exec works on the fallback path.
func TestAgentDelivery(t *testing.T) {
	cli := dockertest.Client(t)
	sb, _ := agentBox(t, cli, dockertest.AgentImage(t, cli))
	res, err := run(t, sb, `tr '\0' ' ' </proc/$PPID/cmdline; echo; stat -c '%u %a' `+agentwire.Binary+
		`; touch `+agentwire.Dir+`/x 2>&1; readlink -v /proc/$PPID/fd/0 2>&1 >/dev/null; cat /proc/$PPID/environ 2>&1 >/dev/null; true`, 0)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	require.Len(t, lines, 5, "%q", res.Stdout)
	require.Equal(t, agentwire.Binary+" serve", strings.TrimSpace(lines[0]), "the command's parent is the agent")
	require.Equal(t, "0 755", lines[1])
	require.Contains(t, lines[2], "Read-only file system")
	require.Contains(t, lines[3], "Permission denied", "the agent's descriptors are closed to its commands")
	require.Contains(t, lines[4], "Permission denied")

	fallback, _ := agentBox(t, cli, "sandgate-porttest/no-such-agent:0")
	res, err = run(t, fallback, `tr '\0' ' ' </proc/$PPID/cmdline`, 0)
	require.NoError(t, err)
	require.NotContains(t, res.Stdout, "sandgate-agent", "a missing agent image falls back to engine execs")
}

// TestAgentAdversarial: a command that attacks its agent gets an error or
// TimedOut, never a forged result, and the next call works.
func TestAgentAdversarial(t *testing.T) {
	cli := dockertest.Client(t)
	sb, _ := agentBox(t, cli, dockertest.AgentImage(t, cli))

	t.Run("kill", func(t *testing.T) {
		res, err := run(t, sb, `kill -9 $PPID; sleep 1; echo forged`, 0)
		require.Error(t, err, "%+v", res)
		res, err = run(t, sb, `echo again`, 0)
		require.NoError(t, err)
		require.Equal(t, "again\n", res.Stdout)
	})
	t.Run("stop", func(t *testing.T) {
		start := time.Now()
		res, err := run(t, sb, `kill -STOP $PPID; exit 0`, 2*time.Second)
		require.NoError(t, err)
		require.True(t, res.TimedOut, "a stopped agent cannot report: the executor's clock decides (%+v)", res)
		require.Less(t, time.Since(start), 2*time.Second+sandbox.ReturnGrace+2*time.Second)
		res, err = run(t, sb, `echo again`, 0)
		require.NoError(t, err)
		require.Equal(t, "again\n", res.Stdout)
	})
	t.Run("ptrace and descriptors", func(t *testing.T) {
		res, err := run(t, sb, `echo forged >/proc/$PPID/fd/1 2>/dev/null && echo wrote; exec 3</proc/$PPID/mem 2>/dev/null && echo opened; exit 7`, 0)
		require.NoError(t, err)
		require.Equal(t, 7, res.ExitCode)
		require.Empty(t, res.Stdout)
	})
	t.Run("replace", func(t *testing.T) {
		res, err := run(t, sb, `cp /bin/true `+agentwire.Binary+` 2>/dev/null && echo replaced; exit 3`, 0)
		require.NoError(t, err)
		require.Equal(t, 3, res.ExitCode)
		require.Empty(t, res.Stdout)
	})
}
