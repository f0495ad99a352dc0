package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/gatewire"
	"github.com/sandgate/sandgate/ports"
)

// TestGateClientsIgnoreProxyVariables: the gate's own requests never go
// through a proxy the environment names (the gate is the proxy).
func TestGateClientsIgnoreProxyVariables(t *testing.T) {
	t.Parallel()
	for _, c := range []*http.Client{NewGateConfigClient("http://x/", "t").client, NewGateReportClient("http://x/", "t").client} {
		tr, ok := c.Transport.(*http.Transport)
		require.True(t, ok)
		require.Nil(t, tr.Proxy)
	}
}

// TestGateConfigClientOutcomes: 200 within the size bound is fetched, 401
// is revocation, anything else (403 included) a failure that keeps the
// last good config; a redirect is never followed, and no error carries
// the token.
func TestGateConfigClientOutcomes(t *testing.T) {
	t.Parallel()
	token := gatewire.NewToken()
	for _, tc := range []struct {
		name   string
		status int
		body   []byte
		want   ports.GateOutcome
	}{
		{"200", 200, []byte("{}"), ports.GateFetched},
		{"401", 401, nil, ports.GateRevoked},
		{"403 is not revocation", 403, nil, ports.GateFailed},
		{"500", 500, nil, ports.GateFailed},
		{"redirect not followed", 302, nil, ports.GateFailed},
		{"body over the limit", 200, make([]byte, gatewire.MaxConfigBytes+1), ports.GateFailed},
		{"body at the limit", 200, make([]byte, gatewire.MaxConfigBytes), ports.GateFetched},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var elsewhere atomic.Int32
			mux := http.NewServeMux()
			mux.HandleFunc(gatewire.ConfigPath, func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("Authorization") != "Bearer "+token {
					w.WriteHeader(http.StatusBadRequest)
					return
				}
				if tc.status == http.StatusFound {
					http.Redirect(w, r, "/elsewhere", http.StatusFound)
					return
				}
				w.WriteHeader(tc.status)
				_, _ = w.Write(tc.body)
			})
			mux.HandleFunc("/", func(http.ResponseWriter, *http.Request) { elsewhere.Add(1) })
			srv := httptest.NewServer(mux)
			t.Cleanup(srv.Close)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			body, o, err := NewGateConfigClient(gatewire.Env{ControlPlane: srv.URL}.ConfigURL(), token).Fetch(ctx)
			require.Equal(t, tc.want, o, "err: %v", err)
			if o == ports.GateFetched {
				require.NoError(t, err)
				require.Equal(t, tc.body, body)
				return
			}
			require.Error(t, err)
			require.NotContains(t, err.Error(), token)
			require.Zero(t, elsewhere.Load(), "a redirect was followed")
		})
	}
}

func TestGateConfigClientDeadControlPlane(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL + gatewire.ConfigPath
	srv.Close()
	token := gatewire.NewToken()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, o, err := NewGateConfigClient(url, token).Fetch(ctx)
	require.Equal(t, ports.GateFailed, o)
	require.Error(t, err)
	require.NotContains(t, err.Error(), token)
}

// TestGateReportClient: POST gatewire.ReportPath with the Bearer token and
// the report as JSON; 2xx is taken, 401 revocation, anything else (a
// redirect included) a failure; no error carries the token.
func TestGateReportClient(t *testing.T) {
	t.Parallel()
	testToken := gatewire.NewToken()
	denied := func(n int64) gatewire.Report {
		return gatewire.Report{Verdicts: []gatewire.VerdictCount{
			{Verdict: gatewire.VerdictDenied, Reason: gatewire.ReasonNotAllowed, Count: n}}}
	}
	var (
		mu          sync.Mutex
		status      = http.StatusNoContent
		got         gatewire.Report
		auth, route string
		decodeErr   error
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		auth = r.Header.Get("Authorization")
		route = r.Method + " " + r.URL.Path
		decodeErr = json.NewDecoder(r.Body).Decode(&got)
		if status == http.StatusFound {
			w.Header().Set("Location", "http://127.0.0.1:1/elsewhere")
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	s := gatewire.Env{ControlPlane: srv.URL}
	h := NewGateReportClient(s.ReportURL(), testToken)
	for _, tt := range []struct {
		status int
		want   ports.GateOutcome
	}{
		{http.StatusNoContent, ports.GateFetched}, {http.StatusUnauthorized, ports.GateRevoked},
		{http.StatusInternalServerError, ports.GateFailed}, {http.StatusFound, ports.GateFailed},
	} {
		mu.Lock()
		status = tt.status
		mu.Unlock()
		o, err := h.Report(context.Background(), denied(3))
		require.Equal(t, tt.want, o, "status %d", tt.status)
		if tt.want != ports.GateFetched {
			require.Error(t, err)
			require.NotContains(t, err.Error(), testToken)
		}
		mu.Lock()
		require.Equal(t, "POST /internal/v1/gate/report", route)
		require.NoError(t, decodeErr)
		require.Equal(t, "Bearer "+testToken, auth)
		require.Equal(t, denied(3), got)
		mu.Unlock()
	}
	srv.Close()
	o, err := h.Report(context.Background(), denied(1))
	require.Equal(t, ports.GateFailed, o)
	require.Error(t, err)
	require.NotErrorIs(t, err, context.Canceled)
}
