package docker

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/gatewire"
	"github.com/sandgate/sandgate/core/sandbox"
)

// recTokens is the provider's ports.GateTokenIssuer in these tests: it
// records the token calls in the fake's call log, so their order relative
// to the engine's calls can be asserted (C-GATE-2), and the revokes.
type recTokens struct {
	f          *fakeEngine
	mu         sync.Mutex
	generated  int
	persisted  []string
	persistErr error
	revokeErr  error
	revoked    []domain.ID
}

func (m *recTokens) Generate() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.generated++
	m.f.mu.Lock()
	m.f.record("generate")
	m.f.mu.Unlock()
	return "sgt_token" + strings.Repeat("0", m.generated)
}

func (m *recTokens) Persist(_ context.Context, _ domain.ID, token string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.f.mu.Lock()
	m.f.record("persist")
	m.f.mu.Unlock()
	if m.persistErr != nil {
		return m.persistErr
	}
	m.persisted = append(m.persisted, token)
	return nil
}

func (m *recTokens) Revoke(_ context.Context, sid domain.ID) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.revoked = append(m.revoked, sid)
	return m.revokeErr
}

// tokenProvider is fakeProvider with m as its gate tokens.
func tokenProvider(f *fakeEngine, m *recTokens) *Provider {
	return newProvider(f, Options{RemoveTimeout: 2 * time.Second, Tokens: m})
}

func gatedSpec(sid string) sandbox.Spec {
	s := spec(sid)
	s.Gate = &sandbox.GateSpec{Image: "gate", ControlplaneURL: "http://cp:7070"}
	return s
}

func gatedFake() *fakeEngine {
	f := newFakeEngine()
	f.images["gate"] = true
	f.files[gatewire.SystemCABundle] = []byte("ROOTS\n")
	f.onExec = gateExec
	return f
}

// gateExec is a healthy gate: its healthcheck passes and `cat` prints its CA.
func gateExec(argv []string) fakeExecBehaviour {
	if argv[0] == "cat" {
		return fakeExecBehaviour{stdout: "CA\n"}
	}
	return fakeExecBehaviour{}
}

// callsFrom returns the recorded calls that start with one of the prefixes.
func callsFrom(f *fakeEngine, prefixes ...string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, c := range f.calls {
		for _, p := range prefixes {
			if strings.HasPrefix(c, p) {
				out = append(out, c)
				break
			}
		}
	}
	return out
}

func TestGatedProvisionOrder(t *testing.T) {
	t.Parallel()
	f := gatedFake()
	m := &recTokens{f: f}
	sb, err := tokenProvider(f, m).Provision(context.Background(), gatedSpec("ses_a"))
	require.NoError(t, err)
	gate := f.byRef(GateName("ses_a"))
	box := f.byRef(ContainerName("ses_a"))
	require.Equal(t, box.id, sb.ID())
	require.Equal(t, []string{
		"generate", "create sandgate-gate-ses_a", "persist", "start " + gate.id,
		"create sandgate-ses_a", "copy-to " + box.id + " /etc/sandgate", "start " + box.id,
	}, callsFrom(f, "generate", "persist", "create", "start", "copy-to"))
	require.Equal(t, []string{"sgt_token0"}, m.persisted)
	require.Equal(t, "container:"+gate.id, string(box.netMode))
	require.Contains(t, gate.env, "GATE_TOKEN=sgt_token0")
	require.Contains(t, box.env, "HTTPS_PROXY=http://127.0.0.1:15080")
	require.Contains(t, box.env, "SSL_CERT_FILE=/etc/sandgate/ca-bundle.pem")
	for _, e := range box.env {
		require.NotContains(t, e, "sgt_", "the gate token never enters the sandbox")
	}
	require.Equal(t, roleGate, gate.labels[labelRole])
	require.Equal(t, "ses_a", gate.labels[sandbox.LabelSession])

	// Adoption: no new token, no create (C-GATE-2).
	_, err = tokenProvider(f, m).Provision(context.Background(), gatedSpec("ses_a"))
	require.NoError(t, err)
	require.Equal(t, 1, m.generated)
	require.Len(t, callsFrom(f, "create"), 2)

	// Destroy removes the pair.
	require.NoError(t, sb.Destroy(context.Background()))
	require.Empty(t, f.containers)
}

// A gated spec on a provider without gate tokens is refused before any
// engine call: it could not mint the gate's token.
func TestGatedWithoutTokensRefused(t *testing.T) {
	t.Parallel()
	f := gatedFake()
	sb, err := fakeProvider(f).Provision(context.Background(), gatedSpec("ses_a"))
	require.ErrorIs(t, err, errNoTokens)
	require.ErrorContains(t, err, "gate")
	require.Nil(t, sb)
	require.Empty(t, f.calls)
	require.Empty(t, f.containers)
}

// A lost race on the gate's name never persists a token.
func TestGatedLostRaceNeverPersists(t *testing.T) {
	t.Parallel()
	f := gatedFake()
	m := &recTokens{f: f}
	var once sync.Once
	f.onCreate = func(name string) error {
		once.Do(func() {
			g := f.addContainer(fakeContainer{name: GateName("ses_a"), running: true, created: time.Now(),
				labels: map[string]string{sandbox.LabelSession: "ses_a", labelRole: roleGate}})
			f.addContainer(fakeContainer{name: ContainerName("ses_a"), image: "img", workdir: sandbox.DefaultWorkdir,
				running: true, netMode: container.NetworkMode("container:" + g.id), labels: map[string]string{sandbox.LabelSession: "ses_a"}})
		})
		return nil
	}
	_, err := tokenProvider(f, m).Provision(context.Background(), gatedSpec("ses_a"))
	require.NoError(t, err)
	require.Equal(t, 1, m.generated, "one Generate for the one create attempt")
	require.Empty(t, m.persisted)
}

// A failed Persist removes the gate it created and never starts it.
func TestGatedPersistFailureRemovesGate(t *testing.T) {
	t.Parallel()
	f := gatedFake()
	m := &recTokens{f: f, persistErr: errors.New("db down")}
	_, err := tokenProvider(f, m).Provision(context.Background(), gatedSpec("ses_a"))
	require.ErrorContains(t, err, "db down")
	require.Empty(t, f.containers)
	require.Empty(t, callsFrom(f, "start"))
}

// A gate that never passes its healthcheck is an error with its log, and
// nothing is left (B-3: the sandbox is never admitted before the gate).
func TestGatedGateNeverReady(t *testing.T) {
	t.Parallel()
	f := gatedFake()
	f.logs = "firewall: xt_owner missing"
	f.onExec = func([]string) fakeExecBehaviour { return fakeExecBehaviour{exitCode: 1} }
	p := newProvider(f, Options{RemoveTimeout: 2 * time.Second, GateReadyTimeout: 300 * time.Millisecond, Tokens: &recTokens{f: f}})
	_, err := p.Provision(context.Background(), gatedSpec("ses_a"))
	require.ErrorContains(t, err, "not ready")
	require.ErrorContains(t, err, "xt_owner missing")
	require.Empty(t, f.containers)
	require.Empty(t, callsFrom(f, "create sandgate-ses_a"))
}

// B-8: a stopped gate is restarted in place, then the sandbox, whose files
// stay, and the new CA is installed.
func TestGatedRestartsStoppedGate(t *testing.T) {
	t.Parallel()
	f := gatedFake()
	m := &recTokens{f: f}
	p := tokenProvider(f, m)
	_, err := p.Provision(context.Background(), gatedSpec("ses_a"))
	require.NoError(t, err)
	gate := f.byRef(GateName("ses_a"))
	box := f.byRef(ContainerName("ses_a"))
	gate.running = false
	sb, err := p.Provision(context.Background(), gatedSpec("ses_a"))
	require.NoError(t, err)
	require.Equal(t, box.id, sb.ID(), "the same sandbox")
	require.Equal(t, []string{"start " + gate.id, "restart " + box.id, "copy-to " + box.id + " /etc/sandgate"},
		callsFrom(f, "start", "restart", "copy-to")[3:])
	require.Equal(t, 1, m.generated)
}

// A gate that cannot be restarted takes the sandbox with it; a new pair is
// built in the same call.
func TestGatedUnrecoverableGateRebuilds(t *testing.T) {
	t.Parallel()
	f := gatedFake()
	m := &recTokens{f: f}
	p := newProvider(f, Options{RemoveTimeout: 2 * time.Second, GateReadyTimeout: 200 * time.Millisecond, Tokens: m})
	_, err := p.Provision(context.Background(), gatedSpec("ses_a"))
	require.NoError(t, err)
	oldBox := f.byRef(ContainerName("ses_a")).id
	f.byRef(GateName("ses_a")).running = false
	// The old gate never passes its healthcheck; a newly created one does.
	var failing atomic.Bool
	failing.Store(true)
	f.onExec = func(argv []string) fakeExecBehaviour {
		if failing.Load() {
			return fakeExecBehaviour{exitCode: 1}
		}
		return gateExec(argv)
	}
	f.onCreate = func(string) error { failing.Store(false); return nil }
	p.opts.GateReadyTimeout = 30 * time.Millisecond
	sb, err := p.Provision(context.Background(), gatedSpec("ses_a"))
	require.NoError(t, err)
	require.NotEqual(t, oldBox, sb.ID())
	require.Equal(t, 2, m.generated)
	require.Len(t, f.containers, 2)
}

// B-2: an image whose USER is the gate uid, by number or by name, is refused
// before anything is created.
func TestGatedRefusesGateUIDImage(t *testing.T) {
	t.Parallel()
	for _, user := range []string{"64250", "64250:64250", "gate"} {
		f := gatedFake()
		f.imageUsers["img"] = user
		f.files["/etc/passwd"] = []byte("root:x:0:0::/root:/bin/sh\ngate:x:64250:64250::/:/bin/false\n")
		m := &recTokens{f: f}
		_, err := tokenProvider(f, m).Provision(context.Background(), gatedSpec("ses_a"))
		require.ErrorIs(t, err, sandbox.ErrGateUIDImage, user)
		require.Zero(t, m.generated, user)
		require.Empty(t, f.containers, user)
	}
	f := gatedFake()
	f.imageUsers["img"] = "app"
	f.files["/etc/passwd"] = []byte("app:x:1000:1000::/:/bin/sh\n")
	_, err := tokenProvider(f, &recTokens{f: f}).Provision(context.Background(), gatedSpec("ses_a"))
	require.NoError(t, err)
}

// A gate left by a crashed create (older than the race window, no sandbox)
// is removed and the pair built.
func TestGatedOrphanGateReplaced(t *testing.T) {
	t.Parallel()
	f := gatedFake()
	orphan := f.addContainer(fakeContainer{name: GateName("ses_a"), created: time.Now().Add(-time.Hour),
		labels: map[string]string{sandbox.LabelSession: "ses_a", labelRole: roleGate}})
	m := &recTokens{f: f}
	_, err := tokenProvider(f, m).Provision(context.Background(), gatedSpec("ses_a"))
	require.NoError(t, err)
	require.NotContains(t, f.containers, orphan.id)
	require.Len(t, m.persisted, 1)
}

// Gated → ungated revokes the token before the rebuild (C-GATE-3).
func TestGatedToUngatedRevokes(t *testing.T) {
	t.Parallel()
	f := gatedFake()
	m := &recTokens{f: f}
	p := tokenProvider(f, m)
	_, err := p.Provision(context.Background(), gatedSpec("ses_a"))
	require.NoError(t, err)
	sb, err := p.Provision(context.Background(), spec("ses_a"))
	require.NoError(t, err)
	require.Equal(t, []domain.ID{domain.MustParseSessionID("ses_a")}, m.revoked)
	require.Len(t, f.containers, 1, "the gate went with the old sandbox")
	require.Equal(t, f.byRef(ContainerName("ses_a")).id, sb.ID())
}

// The gate holds only what it needs and is bounded (C-GATE-1).
func TestGateConfigShape(t *testing.T) {
	t.Parallel()
	cfg, host := gateConfig(gatedSpec("ses_a"), "sgt_x", Options{GateNetwork: "net1"})
	require.Equal(t, "gate", cfg.Image)
	require.Equal(t, "0", cfg.User)
	require.Equal(t, []string{"ALL"}, []string(host.CapDrop))
	require.ElementsMatch(t, []string{"NET_ADMIN", "SETUID", "SETGID", "CHOWN"}, []string(host.CapAdd))
	require.Equal(t, []string{"no-new-privileges"}, host.SecurityOpt)
	require.True(t, host.ReadonlyRootfs)
	require.Equal(t, "net1", string(host.NetworkMode))
	require.Equal(t, int64(gateMemory), host.Memory)
	require.Equal(t, int64(gateMemory), host.MemorySwap, "no swap on top")
	require.NotNil(t, host.PidsLimit)
	require.Contains(t, cfg.Env, "GATE_TOKEN=sgt_x")
}

// Adopting an ungated sandbox costs one inspect: the sandbox's own network
// mode says it has no gate, so the gate's name is not looked up (a 404
// every time). A gated one also inspects its gate, to check the pairing
// (C-GATE-3).
func TestAdoptionInspectsTheGateOnlyWhenGated(t *testing.T) {
	t.Parallel()
	for _, gated := range []bool{false, true} {
		f := gatedFake()
		p := tokenProvider(f, &recTokens{f: f})
		s := spec("ses_a")
		want := map[string]int{ContainerName("ses_a"): 1}
		if gated {
			s = gatedSpec("ses_a")
			want[GateName("ses_a")] = 1
		}
		first, err := p.Provision(context.Background(), s)
		require.NoError(t, err)
		f.mu.Lock()
		clear(f.inspects)
		f.mu.Unlock()
		again, err := p.Provision(context.Background(), s)
		require.NoError(t, err)
		require.Equal(t, first.ID(), again.ID())
		f.mu.Lock()
		require.Equal(t, want, f.inspects, "gated=%v", gated)
		f.mu.Unlock()
	}
}
