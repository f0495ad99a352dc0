//go:build integration

package docker_test

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/jsonmessage"
	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/adapters/docker"
	"github.com/sandgate/sandgate/adapters/docker/dockertest"
	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/core/session"
	"github.com/sandgate/sandgate/internal/testworld"
	"github.com/sandgate/sandgate/ports"
	"github.com/sandgate/sandgate/ports/porttest"
)

const (
	nonRootImage = "sandgate-porttest/nonroot:1"
	nonRootUID   = 1000
)

// nonRootDockerfile is the NonRootImage the suite needs: the base image
// with a uid-1000 user that owns the default workdir.
const nonRootDockerfile = `ARG BASE
FROM ${BASE}
RUN useradd -u 1000 -m -s /bin/bash sandbox && mkdir -p /workspace && chown 1000:1000 /workspace
USER 1000
WORKDIR /workspace
`

// gateUIDImage runs as the gate's uid: a gated sandbox from it is refused
// (B-2).
const (
	gateUIDImage      = "sandgate-porttest/gateuid:1"
	gateUIDDockerfile = "ARG BASE\nFROM ${BASE}\nUSER 64250\n"
)

// TestConformance runs the whole sandbox conformance suite against the
// Docker engine DOCKER_HOST names, the gated rows included (a control plane,
// an origin and a test gate image from internal/testworld). Without an engine
// it skips, except under CI=true, where that is a failure.
func TestConformance(t *testing.T) {
	base := os.Getenv("SANDGATE_TEST_IMAGE")
	if base == "" {
		base = "debian:bookworm"
	}
	runConformance(t, dockertest.Client(t), base, false)
}

// runConformance runs the suite on base over both paths, every sandbox
// under gVisor when gvisor is set.
func runConformance(t *testing.T, cli *client.Client, base string, gvisor bool) {
	dockertest.RequireImage(t, cli, base)
	buildImage(t, cli, nonRootImage, nonRootDockerfile, base)
	buildImage(t, cli, gateUIDImage, gateUIDDockerfile, base)
	gated := gatedHarness(t, cli)

	// dockertest removes everything carrying this run's label at cleanup;
	// before that (cleanups run last-registered first) the suite is held
	// to reaping what it created.
	labels := dockertest.Labels(t, cli)
	t.Cleanup(func() { requireNothingLeft(t, cli, labels) })
	// Every row runs over the in-sandbox agent and over the engine-exec
	// fallback: both answer the same contract (issue 13).
	for _, path := range []struct{ name, agentImage string }{
		{"agent", dockertest.AgentImage(t, cli)},
		{"fallback", ""},
	} {
		t.Run(path.name, func(t *testing.T) {
			conformance(t, cli, base, labels, gated, path.agentImage, gvisor)
		})
	}
}

// conformance runs the suite with providers that use agentImage (empty:
// the fallback path), every sandbox under gVisor when gvisor is set.
func conformance(t *testing.T, cli *client.Client, base string, labels map[string]string, gated gated, agentImage string, gvisor bool) {
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
		// On the test's client, which its cleanup closes (no idle
		// connections left behind).
		opts := docker.Options{Labels: labels, Tokens: tk, GateNetwork: gated.network, AgentImage: agentImage,
			AgentKey: agentKey}
		if gvisor {
			opts.GVisorRuntime = gvisorRuntime
		}
		p := docker.New(cli, opts)
		mu.Lock()
		made = append(made, p)
		mu.Unlock()
		if gvisor {
			return gvisorOnly{p}
		}
		return p
	}
	porttest.Run(t, porttest.Harness{
		Provider:     newProvider(gated.harness.Tokens),
		Image:        base,
		NonRootImage: nonRootImage,
		NonRootUID:   nonRootUID,
		Caps: porttest.Capabilities{
			EnforcesPidsLimit: true,
			PidsLimitOnHost:   gvisor,
			ClampsCPU:         true,
			ExportsStopped:    true,
			StopsSandboxes:    true,
			RunsInit:          true,
			Agent:             agentImage != "",
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
		Gated: gated.harness,
	})
}

// gated is the gated rows' world: its network (gates must join it to reach
// the origin) and the harness.
type gated struct {
	network string
	harness *porttest.GatedHarness
}

// gatedHarness builds the gated rows' world: each session is registered as
// limited to the origin's address, and gates come from the test gate image.
func gatedHarness(t *testing.T, cli *client.Client) gated {
	t.Helper()
	env := testworld.New(t)
	image := env.GateImage(t)
	origin := env.Origin.IPv4.String()
	return gated{network: env.Network, harness: &porttest.GatedHarness{
		Gate: func(rt *testing.T, sid domain.ID) *sandbox.GateSpec {
			env.Register(rt, session.Session{ID: sid,
				Networking: domain.Networking{Type: domain.NetLimited, AllowedHosts: []string{origin}}})
			return &sandbox.GateSpec{Image: image, ControlplaneURL: env.ControlplaneURL}
		},
		Tokens:       env.Store,
		Origin:       net.JoinHostPort(origin, strconv.Itoa(testworld.OriginHTTPPort)),
		OriginBody:   `"kind":"http"`,
		GateUIDImage: gateUIDImage,
		StopGate: func(ctx context.Context, sid domain.ID) error {
			timeout := 1
			return cli.ContainerStop(ctx, docker.GateName(sid.String()), container.StopOptions{Timeout: &timeout})
		},
	}}
}

// buildImage builds tag from dockerfile (with the build argument BASE) with
// the classic builder (no BuildKit here), never pulling.
func buildImage(t *testing.T, cli *client.Client, tag, dockerfile, base string) {
	t.Helper()
	var ctxTar bytes.Buffer
	tw := tar.NewWriter(&ctxTar)
	require.NoError(t, tw.WriteHeader(&tar.Header{Name: "Dockerfile", Mode: 0o644, Size: int64(len(dockerfile))}))
	_, err := tw.Write([]byte(dockerfile))
	require.NoError(t, err)
	require.NoError(t, tw.Close())

	c, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	resp, err := cli.ImageBuild(c, &ctxTar, build.ImageBuildOptions{
		Tags:        []string{tag},
		BuildArgs:   map[string]*string{"BASE": &base},
		Remove:      true,
		ForceRemove: true,
		Version:     build.BuilderV1,
	})
	require.NoError(t, err, "build %s", tag)
	defer func() { _ = resp.Body.Close() }()
	var log bytes.Buffer
	require.NoError(t, jsonmessage.DisplayJSONMessagesStream(resp.Body, &log, 0, false, nil),
		"build %s:\n%s", tag, log.String())
}

// requireNothingLeft fails the test if the suite left any container of this
// run behind (every row reaps what it creates).
func requireNothingLeft(t *testing.T, cli *client.Client, labels map[string]string) {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f := filters.NewArgs()
	for k, v := range labels {
		f.Add("label", k+"="+v)
	}
	left, err := cli.ContainerList(c, container.ListOptions{All: true, Filters: f})
	require.NoError(t, err)
	var names []string
	for _, ctr := range left {
		names = append(names, strings.Join(ctr.Names, ","))
	}
	if len(names) > 0 && !t.Failed() {
		t.Errorf("the suite left %d labelled containers behind: %v", len(names), names)
	}
}

// foreign is a container holding a sandbox's name without the ownership
// label (C-PROV-5).
type foreign struct {
	cli *client.Client
	id  string
}

func createForeign(ctx context.Context, cli *client.Client, image, name string, labels map[string]string) (*foreign, error) {
	created, err := cli.ContainerCreate(ctx, &container.Config{
		Image:      image,
		Entrypoint: []string{"/bin/bash", "-c", "while :; do sleep 3600; done"},
		Labels:     labels,
	}, &container.HostConfig{NetworkMode: "none"}, nil, nil, name)
	if err != nil {
		return nil, fmt.Errorf("create foreign %s: %w", name, err)
	}
	f := &foreign{cli: cli, id: created.ID}
	if err := cli.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		_ = f.Remove(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("start foreign %s: %w", name, err)
	}
	return f, nil
}

// Exists implements porttest.ForeignHolder.
func (f *foreign) Exists(ctx context.Context) (bool, error) {
	_, err := f.cli.ContainerInspect(ctx, f.id)
	if cerrdefs.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// Remove implements porttest.ForeignHolder.
func (f *foreign) Remove(ctx context.Context) error {
	err := f.cli.ContainerRemove(ctx, f.id, container.RemoveOptions{Force: true, RemoveVolumes: true})
	if cerrdefs.IsNotFound(err) {
		return nil
	}
	return err
}
