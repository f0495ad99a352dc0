package gate

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/sandgate/sandgate/core/gatewire"
	"github.com/sandgate/sandgate/ports"
	"github.com/stretchr/testify/require"
)

// fixedFetcher answers every fetch with one config body.
type fixedFetcher struct{ body []byte }

func (f fixedFetcher) Fetch(context.Context) ([]byte, ports.GateOutcome, error) {
	return f.body, ports.GateFetched, nil
}

// gateRun is one serve() with fakes, in the background.
type gateRun struct {
	rec   *recorder
	sys   *fakeSystem
	proxy *fakeProxy
	ready chan struct{}
	err   chan error
	stop  context.CancelFunc
	// settings are what serve gets; configure may change them.
	settings gatewire.Env
}

func startGate(t *testing.T, failStep string, configure func(g *gateRun, d *Deps)) *gateRun {
	t.Helper()
	log, _ := testLogger(t)
	rec := &recorder{}
	g := &gateRun{
		rec: rec, sys: &fakeSystem{rec: rec, fail: failStep}, proxy: newFakeProxy(rec),
		ready: make(chan struct{}), err: make(chan error, 1),
	}
	g.settings = gatewire.Env{
		ControlPlane: "http://executor:8080", Token: testToken, SessionID: testSID, UID: 64250, GID: 64250,
		FetchInterval: time.Hour, CAFile: filepath.Join(t.TempDir(), "ca.pem"),
	}
	d := Deps{
		System: g.sys,
		StartTelemetry: func(context.Context) (func(context.Context) error, error) {
			rec.add("tracer")
			if failStep == "tracer" {
				return nil, errInjected
			}
			return func(context.Context) error { rec.add("tracer-shutdown"); return nil }, nil
		},
		NewProxy: func(opts ProxyOptions) (ports.GateProxy, error) {
			rec.add("proxy")
			if failStep == "proxy" {
				return nil, errInjected
			}
			g.proxy.opts = opts
			return g.proxy, nil
		},
		Fetcher:  fixedFetcher{configBody(t, "a.example")},
		Reporter: &fakeReporter{},
		Log:      log,
		Ready:    func() { rec.add("ready"); close(g.ready) },
	}
	if configure != nil {
		configure(g, &d)
	}
	ctx, cancel := context.WithCancel(context.Background())
	g.stop = cancel
	t.Cleanup(cancel)
	go func() { g.err <- Serve(ctx, g.settings, d) }()
	return g
}

// readyThenStop waits until the gate is ready, stops it and requires a
// clean return.
func (g *gateRun) readyThenStop(t *testing.T) {
	t.Helper()
	select {
	case <-g.ready:
	case <-time.After(10 * time.Second):
		require.FailNow(t, "never ready", "calls: %v", g.rec.list())
	}
	g.stop()
	require.NoError(t, g.wait(t))
}

func (g *gateRun) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-g.err:
		return err
	case <-time.After(10 * time.Second):
		require.FailNow(t, "serve did not return")
		return nil
	}
}

func TestStartupOrder(t *testing.T) {
	t.Parallel()
	g := startGate(t, "", nil)
	g.readyThenStop(t)
	calls := g.rec.list()
	// serve runs on its own goroutine, so it may come before or after the
	// first fetch's setconfig; everything else is strictly ordered.
	require.Equal(t, []string{"firewall", "cadir", "drop", "deny", "tracer", "proxy", "listen"}, calls[:7])
	rest := calls[7:]
	require.ElementsMatch(t, []string{"serve", "setconfig", "ready", "shutdown", "tracer-shutdown"}, rest)
	require.Less(t, indexOf(rest, "setconfig"), indexOf(rest, "ready"))
	require.Equal(t, []string{"shutdown", "tracer-shutdown"}, rest[len(rest)-2:])
	// The proxy got the deny list and the session.
	require.Equal(t, "10.1.2.3/32", g.proxy.opts.Deny[0].String())
	require.Equal(t, testSID, g.proxy.opts.SessionID)
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// TestStartupFailsClosed: a failure at any step returns its error and
// nothing after it runs: in particular nothing listens or serves.
func TestStartupFailsClosed(t *testing.T) {
	t.Parallel()
	steps := []string{"firewall", "cadir", "drop", "deny", "tracer", "proxy", "listen"}
	for i, step := range steps {
		t.Run(step, func(t *testing.T) {
			t.Parallel()
			g := startGate(t, step, nil)
			err := g.wait(t)
			require.ErrorIs(t, err, errInjected)
			want := steps[:i+1]
			if i >= indexOf(steps, "tracer")+1 {
				// Telemetry started: it is flushed on the way out.
				want = append(append([]string(nil), want...), "tracer-shutdown")
			}
			require.Equal(t, want, g.rec.list())
		})
	}
}

// TestStartupPreinstalledFirewall: with GATE_FIREWALL=preinstalled the gate
// neither installs a firewall nor drops privileges; it verifies that it has
// none before anything else, and a failed check fails closed.
func TestStartupPreinstalledFirewall(t *testing.T) {
	t.Parallel()
	preinstalled := func(g *gateRun, _ *Deps) { g.settings.FirewallPreinstalled = true }
	g := startGate(t, "", preinstalled)
	g.readyThenStop(t)
	require.Equal(t, []string{"verify", "clearca", "deny", "tracer", "proxy", "listen"}, g.rec.list()[:6])
	require.NotContains(t, g.rec.list(), "firewall")
	require.NotContains(t, g.rec.list(), "drop")

	for i, step := range []string{"verify", "clearca"} {
		failed := startGate(t, step, preinstalled)
		require.ErrorIs(t, failed.wait(t), errInjected)
		require.Equal(t, []string{"verify", "clearca"}[:i+1], failed.rec.list(), "nothing after a failed %s", step)
	}
}

func TestServeFailureStopsTheGate(t *testing.T) {
	t.Parallel()
	g := startGate(t, "", func(g *gateRun, _ *Deps) { g.proxy.serveErr = errors.New("accept failed") })
	err := g.wait(t)
	require.ErrorContains(t, err, "accept failed")
	require.Contains(t, g.rec.list(), "shutdown")
}

// TestRevokedGateStaysAlive: after 401 the gate neither exits nor fetches;
// it serves (denying everything) until it is stopped.
func TestRevokedGateStaysAlive(t *testing.T) {
	t.Parallel()
	fetches := make(chan struct{}, 10)
	g := startGate(t, "", func(_ *gateRun, d *Deps) {
		d.Fetcher = fetcherFunc(func() ([]byte, ports.GateOutcome, error) {
			fetches <- struct{}{}
			return nil, ports.GateRevoked, errors.New("401")
		})
	})
	select {
	case <-fetches:
	case <-time.After(10 * time.Second):
		require.FailNow(t, "no fetch")
	}
	select {
	case err := <-g.err:
		require.FailNow(t, "serve returned after revocation", "err: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	g.stop()
	require.NoError(t, g.wait(t))
	require.Empty(t, fetches, "fetched again after 401")
	require.True(t, g.proxy.isRevoked())
	require.NotContains(t, g.rec.list(), "ready")
}

type fetcherFunc func() ([]byte, ports.GateOutcome, error)

func (f fetcherFunc) Fetch(context.Context) ([]byte, ports.GateOutcome, error) { return f() }
