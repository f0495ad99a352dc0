//go:build integration

package docker_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"
	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/adapters/docker"
	"github.com/sandgate/sandgate/adapters/docker/dockertest"
	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/ports"
)

// gvisorRuntime is the daemon's name for runsc that the tests use
// (make gvisor, build/ensure-gvisor.sh, registers it).
const gvisorRuntime = "runsc"

// requireGVisor fails under CI (make test registers runsc) and skips
// elsewhere when the daemon has no runsc runtime.
func requireGVisor(t *testing.T, cli *client.Client) {
	t.Helper()
	info, err := cli.Info(context.Background())
	if err == nil {
		if _, ok := info.Runtimes[gvisorRuntime]; ok {
			return
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("the Docker engine has no %q runtime (make gvisor registers it)", gvisorRuntime)
	}
	t.Skipf("the Docker engine has no %q runtime", gvisorRuntime)
}

// gvisorOnly is a provider whose every sandbox asks for gVisor: the
// conformance suite, which builds its own specs, then runs every row
// under runsc.
type gvisorOnly struct{ *docker.Provider }

func (g gvisorOnly) Provision(ctx context.Context, spec sandbox.Spec) (ports.Sandbox, error) {
	spec.Isolation = sandbox.IsolationGVisor
	return g.Provider.Provision(ctx, spec)
}

// TestConformanceGVisor runs the sandbox contract with every sandbox under
// gVisor, over the agent and over the engine-exec fallback, gated rows
// included (the gates stay runc containers).
func TestConformanceGVisor(t *testing.T) {
	cli := dockertest.Client(t)
	requireGVisor(t, cli)
	runConformance(t, cli, "debian:bookworm", true)
}

// TestGVisorIsAnotherKernel: a gVisor sandbox's commands meet gVisor's
// kernel, not the host's (a runc sandbox beside it reports the host's);
// a runtime the engine lacks is refused before anything is created.
func TestGVisorIsAnotherKernel(t *testing.T) {
	cli := dockertest.Client(t)
	requireGVisor(t, cli)
	dockertest.RequireImage(t, cli, "debian:bookworm")
	labels := dockertest.Labels(t, cli)
	p := docker.New(cli, docker.Options{Labels: labels, GVisorRuntime: gvisorRuntime})
	t.Cleanup(func() { _ = p.Close() })
	ctx := context.Background()
	kernel := func(iso sandbox.Isolation) string {
		sid := domain.NewID("ses")
		sb, err := p.Provision(ctx, sandbox.Spec{SessionID: sid, Image: "debian:bookworm", Isolation: iso})
		require.NoError(t, err)
		t.Cleanup(func() { _ = p.Reap(context.WithoutCancel(ctx), sid) })
		res, err := sb.Exec(ctx, sandbox.ExecRequest{Command: "uname -r", Timeout: 30 * time.Second})
		require.NoError(t, err)
		require.Equal(t, 0, res.ExitCode, res.Stderr)
		return strings.TrimSpace(res.Stdout)
	}
	host, gv := kernel(sandbox.IsolationRunc), kernel(sandbox.IsolationGVisor)
	require.NotEqual(t, host, gv, "a gVisor sandbox answers with gVisor's kernel")

	ours := filters.NewArgs()
	for k, v := range labels {
		ours.Add("label", k+"="+v)
	}
	before, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: ours})
	require.NoError(t, err)
	missing := docker.New(cli, docker.Options{Labels: labels, GVisorRuntime: "no-such-runtime"})
	t.Cleanup(func() { _ = missing.Close() })
	_, err = missing.Provision(ctx, sandbox.Spec{SessionID: domain.NewID("ses"), Image: "debian:bookworm", Isolation: sandbox.IsolationGVisor})
	require.ErrorIs(t, err, sandbox.ErrIsolationUnavailable)
	require.ErrorContains(t, err, `no runtime "no-such-runtime"`)
	after, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: ours})
	require.NoError(t, err)
	require.Len(t, after, len(before), "a refused spec creates nothing")
}
