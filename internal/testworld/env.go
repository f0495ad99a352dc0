package testworld

import (
	"context"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/client"
	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/adapters/docker"
	"github.com/sandgate/sandgate/adapters/docker/dockertest"
	"github.com/sandgate/sandgate/adapters/sessionstore"
	"github.com/sandgate/sandgate/core/sandbox"
)

// Images the environment starts from; none is ever pulled.
const (
	// BaseGateImage is what `make gate-image` builds; GateImageEnv names
	// another.
	BaseGateImage = "sandgate/gate:dev"
	// GateImageEnv, when set, names the gate image to start from instead of
	// BaseGateImage (a gate built from another tree).
	GateImageEnv = "SANDGATE_TEST_GATE_IMAGE"
	// OriginImage runs the origin (the probe is static).
	OriginImage = "debian:bookworm"
	// runtimeImage is the gate's runtime stage: Debian with iptables, used
	// as the sandbox image when present so the suite can try `iptables -F`.
	runtimeImage = "sandgate/gate-runtime:dev"
)

// setupTimeout bounds each setup step against the engine.
const setupTimeout = 3 * time.Minute

// Env is one test's gated world on Docker. Its fields are read-only.
type Env struct {
	Cli    *client.Client
	Labels map[string]string
	// Network is the user-defined network gates and the origin join.
	Network string
	// Gateway is the network's IPv4 gateway: the host, where the control
	// plane listens.
	Gateway netip.Addr
	// IPv6 reports whether the network has IPv6.
	IPv6 bool
	// Store is the control plane's session store (Revoke a session here).
	Store *sessionstore.Store
	// ControlplaneURL is the control plane's base URL as gates see it.
	ControlplaneURL string
	// Origin is the test's origin server.
	Origin Origin
	// SandboxImage is what sandboxes are created from.
	SandboxImage string
	// Provider is the gated Docker provider.
	Provider *docker.Provider
	// Collector receives every gate's spans.
	Collector *Collector
	// ProbePath is the probe binary on the host.
	ProbePath string

	// Isolation is every sandbox's isolation (GVisor sets it).
	Isolation sandbox.Isolation

	tmp    string
	ca     testCA
	tokens *recordingTokens

	gateOnce  sync.Once
	gateImage string
}

// Option changes what New builds.
type Option func(*Env, *docker.Options)

// GVisor makes every sandbox of the environment a gVisor one, run by the
// engine's runtime named runtime (the gates stay runc containers).
func GVisor(runtime string) Option {
	return func(e *Env, o *docker.Options) {
		e.Isolation = sandbox.IsolationGVisor
		o.GVisorRuntime = runtime
	}
}

// New builds the environment. Without a reachable engine or the local
// images the test is skipped (failed under CI=true), as dockertest does.
func New(t *testing.T, opts ...Option) *Env {
	t.Helper()
	cli := dockertest.Client(t)
	dockertest.RequireImage(t, cli, OriginImage)
	e := &Env{Cli: cli, Labels: dockertest.Labels(t, cli), tmp: t.TempDir()}
	e.SandboxImage = OriginImage
	if imageExists(cli, runtimeImage) {
		e.SandboxImage = runtimeImage
	}
	e.ProbePath = buildProbe(t, e.tmp)
	e.ca = newTestCA(t)
	e.createNetwork(t)
	e.startControlPlane(t)
	e.startCollector(t)
	e.startOrigin(t)
	e.tokens = &recordingTokens{Store: e.Store}
	o := docker.Options{Labels: e.Labels, GateNetwork: e.Network, Tokens: e.tokens,
		Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil))}
	for _, opt := range opts {
		opt(e, &o)
	}
	e.Provider = docker.New(cli, o)
	return e
}

// OriginCAPEM is the PEM of the CA that issued the origin's certificate.
func (e *Env) OriginCAPEM() []byte { return e.ca.certPEM }

// OriginCACommonName is that CA's subject common name (the issuer a probe
// prints for the origin's own leaf).
func (e *Env) OriginCACommonName() string { return testCACommonName }

// Tokens returns every gate token the provider minted so far (for the
// rows asserting that no token leaks).
func (e *Env) Tokens() []string { return e.tokens.all() }

func ctxFor(t *testing.T) (context.Context, context.CancelFunc) {
	return context.WithTimeout(t.Context(), setupTimeout)
}

func imageExists(cli *client.Client, ref string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := cli.ImageInspect(ctx, ref)
	return err == nil
}

// writeTemp writes data to a file in the environment's temp dir.
func (e *Env) writeTemp(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(e.tmp, name)
	require.NoError(t, os.WriteFile(p, data, 0o600))
	return p
}

// testWriter sends the provider's log lines to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}
