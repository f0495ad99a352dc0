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
	p := docker.New(cli, docker.Options{Labels: dockertest.Labels(t, cli), AgentImage: agentImage, AgentKey: agentKey})
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
	require.Equal(t, agentwire.Binary+" daemon", strings.TrimSpace(lines[0]), "the command's parent is the agent's daemon")
	require.Equal(t, "0 755", lines[1])
	require.Contains(t, lines[2], "Read-only file system")
	require.Contains(t, lines[3], "Permission denied", "the agent's descriptors are closed to its commands")
	require.Contains(t, lines[4], "Permission denied")

	fallback, _ := agentBox(t, cli, "sandgate-porttest/no-such-agent:0")
	res, err = run(t, fallback, `tr '\0' ' ' </proc/$PPID/cmdline`, 0)
	require.NoError(t, err)
	require.NotContains(t, res.Stdout, "sandgate-agent", "a missing agent image falls back to engine execs")
}

// The adversarial rows of the agent (a command that kills, stops or
// starves it, or reaches for its memory, descriptors or binary) are
// ports/porttest's C-EXEC-4/agent-* rows, run on both backends.

// agentKey is the tests' agent key: every agent stream is a relay to its
// sandbox's daemon, as under the executor, which derives its own key from
// its secret key.
func agentKey() []byte { return []byte("sandgate integration test agent key") }
