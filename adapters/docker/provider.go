package docker

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/docker/docker/client"

	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/ports"
)

// Options configure a Provider. The zero value works.
type Options struct {
	// Logger receives the few things worth saying once (ignored hardening
	// fields). Default: slog.Default().
	Logger *slog.Logger
	// Tokens mints the gate token of a gated sandbox (C-GATE-2) and
	// revokes a session's token before Reap removes anything (#197: a token
	// must not outlive its gate) and when a reshape dismantles a gate. A
	// provider without it refuses gated specs (before anything is created)
	// and reaps without revoking.
	Tokens ports.GateTokenIssuer
	// Labels are added to every container this provider creates (tests mark
	// their containers so a cleanup can find them), and Owned lists only
	// containers carrying all of them: executors sharing a daemon with
	// different labels never see — so never reap as orphans — each other's.
	Labels map[string]string
	// RemoveTimeout bounds the wait for a removal in progress. Default 30 s.
	RemoveTimeout time.Duration
	// GateNetwork is the Docker network gates join (the sandbox shares the
	// gate's namespace). It must reach the control plane. Default "bridge".
	GateNetwork string
	// GateReadyTimeout bounds the wait for a new or restarted gate to pass
	// its healthcheck (firewall verified, first config taken). Default 60 s.
	GateReadyTimeout time.Duration
	// StaleTempAge is how long a write's temporary must have gone
	// unmodified before the sweep on adoption removes it. Default
	// sandbox.DefaultStaleTempAge.
	StaleTempAge time.Duration
	// AgentImage is the image that carries the in-sandbox agent
	// (`docker build --target agent`). Empty: no agent, every operation
	// is an engine exec (the fallback path). An image the daemon does not
	// have makes the same fallback, logged once.
	AgentImage string
	// AgentKey returns the key each sandbox's agent token derives from
	// (agentwire.Token), read when an agent starts: with one, every agent
	// stream is a relay to one daemon per sandbox, whose procs outlive the
	// stream (an executor restart: keep the key). Nil or empty: each
	// stream's agent serves alone and its procs end with it.
	AgentKey func() []byte
	// GVisorRuntime is the daemon's name for runsc (daemon.json
	// "runtimes"), taken by sandboxes whose spec asks for gVisor. Empty:
	// gVisor is not offered, and such a spec is refused
	// (sandbox.ErrIsolationUnavailable), as it is when the daemon does not
	// list the runtime.
	GVisorRuntime string
	// ObserveDataPlane, when set, is told which path each Exec and file
	// operation takes (agent true, fallback false).
	ObserveDataPlane func(ctx context.Context, agent bool)
}

// Provider is ports.Provider on one Docker daemon.
type Provider struct {
	eng  engine
	opts Options

	mu   sync.Mutex // guards ncpu
	ncpu int

	ephemeralOnce sync.Once
	negotiateOnce sync.Once

	// swept holds the ids of the containers this provider has swept for
	// stale temporaries (sweep.go).
	swept  sync.Map
	agents agents
}

// negotiator is the client's API version negotiation. The client negotiates
// lazily on its first request, and that first negotiation races with
// concurrent requests (a data race in the client); every entry point runs it
// once, up front, instead.
type negotiator interface {
	NegotiateAPIVersion(ctx context.Context)
}

func (p *Provider) negotiate(ctx context.Context) {
	p.negotiateOnce.Do(func() {
		if n, ok := p.eng.(negotiator); ok {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			n.NegotiateAPIVersion(ctx)
		}
	})
}

var _ ports.Provider = (*Provider)(nil)

// New returns a Provider on cli. It starts nothing and calls nothing.
func New(cli *client.Client, opts Options) *Provider { return newProvider(cli, opts) }

// NewFromEnv connects to the daemon DOCKER_HOST (and DOCKER_TLS_VERIFY,
// DOCKER_CERT_PATH) name — unix or tcp — negotiating the API version.
func NewFromEnv(opts Options) (*Provider, error) {
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("docker client: %w", err)
	}
	return New(cli, opts), nil
}

func newProvider(eng engine, opts Options) *Provider {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.RemoveTimeout <= 0 {
		opts.RemoveTimeout = 30 * time.Second
	}
	if opts.GateNetwork == "" {
		opts.GateNetwork = "bridge"
	}
	if opts.GateReadyTimeout <= 0 {
		opts.GateReadyTimeout = 60 * time.Second
	}
	if opts.StaleTempAge <= 0 {
		opts.StaleTempAge = sandbox.DefaultStaleTempAge
	}
	return &Provider{eng: eng, opts: opts}
}

// daemonCPUs is the daemon's CPU count, asked once it has answered.
func (p *Provider) daemonCPUs(ctx context.Context) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ncpu > 0 {
		return p.ncpu, nil
	}
	info, err := p.eng.Info(ctx)
	if err != nil {
		return 0, translate(err, "info")
	}
	p.ncpu = info.NCPU
	return p.ncpu, nil
}
