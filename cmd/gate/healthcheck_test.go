package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestHealthcheck(t *testing.T) {
	t.Parallel()
	healthy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(healthy.Close)
	unready := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(unready.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	dead := ln.Addr().String()
	require.NoError(t, ln.Close())

	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	require.NoError(t, os.WriteFile(ca, []byte("-----BEGIN CERTIFICATE-----\n"), 0o644))
	empty := filepath.Join(dir, "empty.pem")
	require.NoError(t, os.WriteFile(empty, nil, 0o644))
	hostport := func(s *httptest.Server) string { return strings.TrimPrefix(s.URL, "http://") }

	for _, tc := range []struct {
		name, addr, caFile string
		code               int
		reason             string
	}{
		{"live and CA written", hostport(healthy), ca, 0, ""},
		{"live but no CA file", hostport(healthy), filepath.Join(dir, "absent.pem"), 1, "no CA certificate"},
		{"live but an empty CA file", hostport(healthy), empty, 1, "no CA certificate"},
		{"live but a directory", hostport(healthy), dir, 1, "no CA certificate"},
		{"not ready", hostport(unready), ca, 1, "/healthz answered 503"},
		{"dead address", dead, ca, 1, "connection refused"},
		{"non-loopback address", "10.0.0.1:15080", ca, 1, "GATE_ADDR"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var stderr bytes.Buffer
			env := map[string]string{"GATE_ADDR": tc.addr, "GATE_CA_FILE": tc.caFile}
			code := healthcheck(context.Background(), getenv(env), &stderr)
			require.Equal(t, tc.code, code, "stderr: %s", stderr.String())
			if tc.code == 0 {
				require.Empty(t, stderr.String())
				return
			}
			require.Contains(t, stderr.String(), tc.reason)
		})
	}
}
