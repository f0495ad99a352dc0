//go:build integration

package docker_test

import (
	"context"
	"os"
	"sync"
	"testing"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"

	"github.com/sandgate/sandgate/adapters/docker"
	"github.com/sandgate/sandgate/adapters/docker/dockertest"
	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/ports"
	"github.com/sandgate/sandgate/ports/porttest"
)

// gvisorRuntime is the daemon's name for runsc that the tests use
// (build/ensure-docker.sh registers it when SANDGATE_GVISOR=1).
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
		t.Fatalf("the Docker engine has no %q runtime (build/ensure-docker.sh registers it with SANDGATE_GVISOR=1)", gvisorRuntime)
	}
	t.Skipf("the Docker engine has no %q runtime", gvisorRuntime)
}

// gvisorOnly is a provider whose every sandbox asks for gVisor: the
// conformance suite, which builds its own specs, then runs every row
// under runsc.
type gvisorOnly struct{ ports.Provider }

func (g gvisorOnly) Provision(ctx context.Context, spec sandbox.Spec) (ports.Sandbox, error) {
	spec.Isolation = sandbox.IsolationGVisor
	return g.Provider.Provision(ctx, spec)
}

// TestConformanceGVisor runs the sandbox contract with every sandbox under
// gVisor, over the agent and over the engine-exec fallback. The gated rows
// do not apply: a gated gVisor sandbox is refused on Docker
// (TestGVisorRefusals).
func TestConformanceGVisor(t *testing.T) {
	cli := dockertest.Client(t)
	requireGVisor(t, cli)
	base := "debian:bookworm"
	dockertest.RequireImage(t, cli, base)
	buildImage(t, cli, nonRootImage, nonRootDockerfile, base)
	labels := dockertest.Labels(t, cli)
	t.Cleanup(func() { requireNothingLeft(t, cli, labels) })
	for _, path := range []struct{ name, agentImage string }{
		{"agent", dockertest.AgentImage(t, cli)},
		{"fallback", ""},
	} {
		t.Run(path.name, func(t *testing.T) {
			var (
				mu   sync.Mutex
				made []*docker.Provider
			)
			t.Cleanup(func() {
				mu.Lock()
				defer mu.Unlock()
				for _, p := range made {
					_ = p.Close()
				}
			})
			newProvider := func(tk ports.GateTokenIssuer) ports.Provider {
				p := docker.New(cli, docker.Options{Labels: labels, Tokens: tk, AgentImage: path.agentImage,
					AgentKey: agentKey, GVisorRuntime: gvisorRuntime})
				mu.Lock()
				made = append(made, p)
				mu.Unlock()
				return gvisorOnly{p}
			}
			porttest.Run(t, porttest.Harness{
				Provider:     newProvider(nil),
				Image:        base,
				NonRootImage: nonRootImage,
				NonRootUID:   nonRootUID,
				Caps: porttest.Capabilities{
					EnforcesPidsLimit: true,
					ClampsCPU:         true,
					ExportsStopped:    true,
					StopsSandboxes:    true,
					RunsInit:          true,
					Agent:             path.agentImage != "",
					StagesLargeWrites: true,
				},
				WithTokens: newProvider,
				Stop: func(ctx context.Context, sid domain.ID) error {
					timeout := 1
					return cli.ContainerStop(ctx, docker.ContainerName(sid.String()), container.StopOptions{Timeout: &timeout})
				},
				Foreign: func(ctx context.Context, sid domain.ID) (porttest.ForeignHolder, error) {
					return createForeign(ctx, cli, base, docker.ContainerName(sid.String()), labels)
				},
			})
		})
	}
}
