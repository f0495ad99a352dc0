package main

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/adapters/httpapi"
	"github.com/sandgate/sandgate/adapters/sessionstore"
	"github.com/sandgate/sandgate/app/gate"
	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/egress"
	"github.com/sandgate/sandgate/core/gatewire"
	"github.com/sandgate/sandgate/core/session"
)

// loopbackSystem skips what needs root and a network namespace of its own
// (firewall, chown, privileges: the firewall helper's container tests and
// TestDropPrivileges cover those) and listens on an ephemeral loopback port.
type loopbackSystem struct{ addr chan string }

func (loopbackSystem) InstallFirewall(uint32) error              { return nil }
func (loopbackSystem) PrepareCADir(string, uint32, uint32) error { return nil }
func (loopbackSystem) DropPrivileges(uint32, uint32) error       { return nil }
func (loopbackSystem) VerifyUnprivileged(uint32, uint32) error   { return nil }
func (loopbackSystem) ClearCAFile(string) error                  { return nil }

// DenyList is empty: the test's origin is on loopback like everything else.
func (loopbackSystem) DenyList(context.Context, string) ([]netip.Prefix, error) { return nil, nil }

func (s loopbackSystem) Listen(netip.AddrPort) (net.Listener, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err == nil {
		s.addr <- ln.Addr().String()
	}
	return ln, err
}

// TestGateEndToEnd runs the real gate (proxy, config loop, fetcher, health)
// against the real config handler on a real session store: ready only with
// the CA file written, a placeholder replaced for the bound origin, and a
// revoked token turns the gate unhealthy and denying without exiting.
func TestGateEndToEnd(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, err := sessionstore.OpenSQLite(ctx, filepath.Join(t.TempDir(), "store.db"), bytes.Repeat([]byte{1}, session.KeyLen))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, store.Close()) })

	// The origin says whether it got the secret rather than echoing it
	// (the gate redacts echoes).
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "secret="+strconv.FormatBool(r.Header.Get("Authorization") == "Bearer "+testSecretValue))
	}))
	t.Cleanup(origin.Close)
	originHost := "127.0.0.1"

	sid := domain.NewID("ses")
	require.NoError(t, store.PutSession(ctx, session.Session{
		ID:         sid,
		Networking: domain.Networking{Type: domain.NetLimited, AllowedHosts: []string{strings.TrimPrefix(origin.URL, "http://")}},
		Credentials: []session.Credential{{
			ID: "cred1", Name: "API_KEY", Secret: gatewire.NewSecret(testSecretValue),
			AllowedHosts: []string{originHost}, Locations: []gatewire.Location{gatewire.LocationHeaders},
		}},
	}))
	token := store.Generate()
	require.NoError(t, store.Persist(ctx, sid, token))
	log, logs := testLogger(t)
	cp := httptest.NewServer(httpapi.NewGateConfigHandler(store, store, log))
	t.Cleanup(cp.Close)

	caFile := filepath.Join(t.TempDir(), "ca.pem")
	s := gatewire.Env{ControlPlane: cp.URL, Token: token, SessionID: sid, UID: 64250, GID: 64250,
		FetchInterval: 20 * time.Millisecond, CAFile: caFile}
	d := realDeps(s, log)
	sys := loopbackSystem{addr: make(chan string, 1)}
	d.System = sys
	ready := make(chan struct{})
	d.Ready = func() { close(ready) }
	gctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- gate.Serve(gctx, s, d) }()
	t.Cleanup(func() {
		stop()
		select {
		case err := <-served:
			require.NoError(t, err)
		case <-time.After(10 * time.Second):
			require.FailNow(t, "the gate did not stop")
		}
	})
	var addr string
	select {
	case addr = <-sys.addr:
	case <-time.After(10 * time.Second):
		require.FailNow(t, "the gate never listened")
	}
	select {
	case <-ready:
	case err := <-served:
		require.FailNow(t, "the gate stopped", "err: %v", err)
	case <-time.After(10 * time.Second):
		require.FailNow(t, "the gate never became ready", "logs: %s", logs())
	}
	health := func() int {
		return healthcheck(ctx, getenv(map[string]string{"GATE_ADDR": addr, "GATE_CA_FILE": caFile}), io.Discard)
	}
	require.Equal(t, 0, health())
	caPEM, err := os.ReadFile(caFile)
	require.NoError(t, err)
	block, _ := pem.Decode(caPEM)
	require.NotNil(t, block)
	ca, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	require.True(t, ca.IsCA)
	require.Contains(t, ca.Subject.CommonName, sid.String())

	proxyURL, err := url.Parse("http://" + addr)
	require.NoError(t, err)
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL)}, Timeout: 10 * time.Second}
	get := func() (int, string) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, origin.URL+"/", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+egress.Placeholder(sid, "API_KEY"))
		resp, err := client.Do(req)
		require.NoError(t, err)
		defer func() { require.NoError(t, resp.Body.Close()) }()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	status, body := get()
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "secret=true", body)

	// Revoked: the next fetch gets 401; the gate denies everything, turns
	// unhealthy and keeps running (the cleanup checks a clean stop).
	require.NoError(t, store.Revoke(ctx, sid))
	require.Eventually(t, func() bool { return health() == 1 }, 10*time.Second, 10*time.Millisecond)
	status, _ = get()
	require.Equal(t, http.StatusForbidden, status)
	select {
	case err := <-served:
		require.FailNow(t, "the gate exited after revocation", "err: %v", err)
	default:
	}
	require.Contains(t, logs(), "gate token revoked")
}
