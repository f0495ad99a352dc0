package testworld

import (
	"context"
	"crypto/rand"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/adapters/httpapi"
	"github.com/sandgate/sandgate/adapters/sessionstore"
	"github.com/sandgate/sandgate/core/gatewire"
	"github.com/sandgate/sandgate/core/session"
)

// startControlPlane serves the control plane on the network's gateway,
// where gates reach the host.
func (e *Env) startControlPlane(t *testing.T) {
	t.Helper()
	e.Store, e.ControlplaneURL = ServeControlPlane(t, e.Gateway.String(), e.tmp)
}

// ServeControlPlane opens a SQLite session store (in dir) with a random key and
// serves the gate endpoints (config, and the verdict report, counted
// nowhere) on host, a port picked by the kernel, for the test's duration. It
// returns the store and the control plane's base URL. Backends' tests
// (Docker here, Kubernetes' conformance test) share it.
func ServeControlPlane(t *testing.T, host, dir string) (*sessionstore.Store, string) {
	t.Helper()
	key := make([]byte, session.KeyLen)
	_, err := rand.Read(key)
	require.NoError(t, err)
	store, err := sessionstore.OpenSQLite(context.Background(), filepath.Join(dir, "store.db"), key)
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })

	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	require.NoError(t, err, "listen on %s, where gates reach the host", host)
	report := httpapi.NewGateReportHandler(store, nil, nil)
	mux := http.NewServeMux()
	mux.Handle(gatewire.ReportPath, report)
	mux.Handle("/", httpapi.NewGateConfigHandler(store, store, nil))
	srv := httptest.NewUnstartedServer(mux)
	_ = srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return store, srv.URL
}

// Register stores the session's record (policy and credentials) where the
// gate's config comes from.
func (e *Env) Register(t *testing.T, rec session.Session) {
	t.Helper()
	ctx, cancel := ctxFor(t)
	defer cancel()
	require.NoError(t, e.Store.PutSession(ctx, rec))
}
