//go:build integration

package kubernetes_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/adapters/kubernetes"
	"github.com/sandgate/sandgate/core/agentwire"
	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
)

const agentLabelVal = "kubernetes-agent"

// TestAgentDelivery: on a pod with the agent, commands run under it (their
// parent), its binary is root's, 0755, on a read-only mount, and its /proc
// entries are closed to the sandbox's processes; a command that kills it
// gets an error and the next call works (a fresh agent).
func TestAgentDelivery(t *testing.T) {
	cfg, cli, base := connect(t)
	agentImage := os.Getenv("SANDGATE_TEST_AGENT_IMAGE")
	if agentImage == "" {
		agentImage = "sandgate/agent:dev"
	}
	importImage(t, agentImage)
	removeWithLabel(t, cli, agentLabelVal)
	t.Cleanup(func() { removeWithLabel(t, cli, agentLabelVal) })
	p, err := kubernetes.New(cfg, kubernetes.Options{Namespace: namespace,
		Labels: map[string]string{testLabel: agentLabelVal}, AgentImage: agentImage, AgentKey: agentKey})
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	sid := domain.NewID("ses")
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	sb, err := p.Provision(ctx, sandbox.Spec{SessionID: sid, Image: base})
	require.NoError(t, err)
	t.Cleanup(func() {
		c, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		require.NoError(t, p.Reap(c, sid))
	})

	res, err := sb.Exec(ctx, sandbox.ExecRequest{Command: `tr '\0' ' ' </proc/$PPID/cmdline; echo; stat -c '%u %a' ` +
		agentwire.Binary + `; touch ` + agentwire.Dir + `/x 2>&1; readlink -v /proc/$PPID/fd/0 2>&1 >/dev/null; true`})
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	require.Len(t, lines, 4, "%q", res.Stdout)
	require.Equal(t, agentwire.Binary+" daemon", strings.TrimSpace(lines[0]), "the command's parent is the agent's daemon")
	require.Equal(t, "0 755", lines[1])
	require.Contains(t, lines[2], "Read-only file system")
	require.Contains(t, lines[3], "Permission denied", "the agent's descriptors are closed to its commands")

	_, err = sb.Exec(ctx, sandbox.ExecRequest{Command: `kill -9 $PPID; sleep 1; echo forged`})
	require.Error(t, err, "a killed agent's command has no result")
	res, err = sb.Exec(ctx, sandbox.ExecRequest{Command: `echo again`})
	require.NoError(t, err)
	require.Equal(t, "again\n", res.Stdout)
}

// agentKey is the tests' agent key: every agent stream is a relay to its
// sandbox's daemon, as under the executor, which derives its own key from
// its secret key.
func agentKey() []byte { return []byte("sandgate integration test agent key") }
