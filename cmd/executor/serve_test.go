package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/sandgate/sandgate/adapters/httpapi"
	"github.com/sandgate/sandgate/cmd/executor/internal/config"
	"github.com/sandgate/sandgate/cmd/internal/versioncmd"
	"github.com/sandgate/sandgate/ports"
	"github.com/sandgate/sandgate/ports/portfake"
)

const testToken = "test-api-token-0123456789"

// testConfig is a configuration on a free loopback port with the store in a
// temporary directory; kv overrides the environment.
func testConfig(t *testing.T, kv map[string]string) config.Config {
	t.Helper()
	dir := t.TempDir()
	e := map[string]string{
		"SANDGATE_LISTEN":          "127.0.0.1:0",
		"SANDGATE_API_TOKEN":       testToken,
		"SANDGATE_DATABASE_URL":    "sqlite://" + filepath.Join(dir, "db", "sandgate.db"),
		"SANDGATE_SECRET_KEY_FILE": filepath.Join(dir, "secret.key"),
		"SANDGATE_CHECKPOINT_DIR":  filepath.Join(dir, "checkpoints"),
	}
	for k, v := range kv {
		e[k] = v
	}
	cfg, err := config.Load(nil, func(k string) (string, bool) { v, ok := e[k]; return v, ok }, io.Discard)
	require.NoError(t, err)
	return cfg
}

// logFile is a log sink the servers' goroutines may write to at once (a
// file's writes are atomic enough for JSON lines).
type logFile struct{ *os.File }

func (l logFile) String() string {
	b, err := os.ReadFile(l.Name())
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// started runs the graph with p as the provider and returns the API's base
// URL and the log.
func started(t *testing.T, cfg config.Config, p *portfake.Provider) (string, *fxtest.App, logFile) {
	t.Helper()
	return startedWith(t, cfg, fakeModule(p))
}

// fakeModule provides p as the provider, minting and revoking gate tokens
// on the executor's store, as the real providers are wired
// (serve_modules.go).
func fakeModule(p *portfake.Provider) fx.Option {
	return fx.Module("provider", fx.Provide(func(store ports.SessionStore) ports.Provider {
		p.Tokens = store
		return p
	}))
}

// startedWith runs the graph with the given provider module.
func startedWith(t *testing.T, cfg config.Config, provider fx.Option) (string, *fxtest.App, logFile) {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.Close() })
	logs := logFile{f}
	var srv *servers
	app := fxtest.New(t, serveOptions(cfg, newLogger(logs), provider), fx.Populate(&srv))
	app.RequireStart()
	t.Cleanup(func() { _ = app.Stop(context.Background()) })
	return "http://" + srv.apiAddr.String(), app, logs
}

func get(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

func TestServeGraphValidates(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t, nil)
	require.NoError(t, fx.ValidateApp(serveOptions(cfg, newLogger(io.Discard), providerModule)))
}

func TestServeConstructorsStartNothing(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t, nil)
	app := fx.New(serveOptions(cfg, newLogger(io.Discard), fakeModule(portfake.NewProvider())))
	require.NoError(t, app.Err())
	require.NoFileExists(t, cfg.KeyFile, "the key is created by OnStart")
	require.NoDirExists(t, filepath.Dir(strings.TrimPrefix(cfg.DatabaseURL, "sqlite://")), "the store opens in OnStart")
	require.NoDirExists(t, cfg.CheckpointDir, "the checkpoint store prepares in OnStart")
}

func TestServeEndpoints(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t, nil)
	base, app, logs := started(t, cfg, portfake.NewProvider())
	tests := []struct {
		name, path, token string
		status            int
		body              string
	}{
		{"healthz", "/healthz", "", 200, `{"status":"ok"}`},
		{"readyz", "/readyz", "", 200, `{"status":"ready"}`},
		{"list", "/v1/sessions", testToken, 200, `{"sessions":[]}`},
		{"no token", "/v1/sessions", "", 401, `{"error":{"code":"unauthorized","message":"a valid API token is required"}}`},
		{"wrong token", "/v1/sessions", "wrong-token-0123456789", 401, `"unauthorized"`},
		{"unknown path", "/nope", "", 404, `{"error":{"code":"not_found","message":"no such endpoint"}}`},
		{"gate config without token", "/internal/v1/gate/config", "", 401, `"unauthorized"`},
		{"openapi", "/openapi.json", "", 200, `"openapi": "3.0.3"`},
	}
	for _, tt := range tests {
		status, body := get(t, base+tt.path, tt.token)
		require.Equal(t, tt.status, status, tt.name)
		require.Contains(t, body, tt.body, tt.name)
	}
	status, body := get(t, base+"/metrics", "")
	require.Equal(t, 200, status)
	require.Contains(t, body, "go_goroutines")
	require.Contains(t, body, `http_server_request_duration_seconds_count{`, "the API's requests are measured")

	app.RequireStop()
	_, err := http.Get(base + "/healthz") //nolint:noctx // the server is gone: it must not answer
	require.Error(t, err)
	key, err := os.ReadFile(cfg.KeyFile)
	require.NoError(t, err)
	for _, secret := range []string{testToken, strings.TrimSpace(string(key))} {
		require.NotContains(t, logs.String(), secret)
	}
	require.Contains(t, logs.String(), `"msg":"listening"`)
}

func TestServeGateListener(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	cfg := testConfig(t, map[string]string{"SANDGATE_GATE_LISTEN": addr, "SANDGATE_CONTROLPLANE_URL": "http://10.0.0.1:7071"})
	started(t, cfg, portfake.NewProvider())
	status, _ := get(t, "http://"+addr+"/internal/v1/gate/config", "sgt_unknown")
	require.Equal(t, http.StatusUnauthorized, status)
	status, _ = get(t, "http://"+addr+"/v1/sessions", testToken)
	require.Equal(t, http.StatusNotFound, status, "the gate listener serves the gate endpoint only")
}

func TestServeReadyzNamesFailure(t *testing.T) {
	t.Parallel()
	p := portfake.NewProvider()
	p.Fail(portfake.OpOwned, errors.New("daemon down"))
	base, _, logs := started(t, testConfig(t, nil), p)
	status, body := get(t, base+"/readyz", "")
	require.Equal(t, http.StatusServiceUnavailable, status)
	require.JSONEq(t, `{"status":"unready","failed":["provider"]}`, body)
	require.Contains(t, logs.String(), "daemon down")
}

func TestServeBindErrorFailsStart(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	cfg := testConfig(t, map[string]string{"SANDGATE_LISTEN": ln.Addr().String()})
	app := fx.New(serveOptions(cfg, newLogger(io.Discard), fakeModule(portfake.NewProvider())))
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	err = app.Start(ctx)
	require.ErrorContains(t, err, "SANDGATE_LISTEN: listen tcp "+ln.Addr().String())
	require.ErrorContains(t, err, "address already in use")
}

// blockedOwned returns a provider whose Owned (what /readyz asks) waits at
// the gate it returns: an in-flight request for the shutdown tests.
func blockedOwned() (*portfake.Provider, *portfake.Gate) {
	p, gate := portfake.NewProvider(), portfake.NewGate()
	p.Hook(portfake.OpOwned, gate.Hook)
	return p, gate
}

// inFlight starts GET /readyz against a provider that blocks at gate, and
// waits until the request is inside the handler.
func inFlight(t *testing.T, base string, gate *portfake.Gate) <-chan int {
	t.Helper()
	done := make(chan int, 1)
	go func() {
		resp, err := http.Get(base + "/readyz") //nolint:noctx // bounded by the server's shutdown
		if err != nil {
			done <- -1
			return
		}
		_ = resp.Body.Close()
		done <- resp.StatusCode
	}()
	select {
	case <-gate.Entered():
	case <-time.After(10 * time.Second):
		t.Fatal("the request never reached the provider")
	}
	return done
}

func TestServeShutdownLetsRequestsFinish(t *testing.T) {
	t.Parallel()
	p, gate := blockedOwned()
	base, app, _ := started(t, testConfig(t, nil), p)
	done := inFlight(t, base, gate)
	stopped := make(chan error, 1)
	go func() { stopped <- app.Stop(context.Background()) }()
	select {
	case err := <-stopped:
		t.Fatalf("stop returned (%v) with a request in flight", err)
	case <-time.After(100 * time.Millisecond):
	}
	gate.Release()
	require.Equal(t, http.StatusOK, <-done)
	require.NoError(t, <-stopped)
}

func TestServeShutdownIsBounded(t *testing.T) {
	t.Parallel()
	p, gate := blockedOwned()
	base, app, _ := started(t, testConfig(t, map[string]string{"SANDGATE_SHUTDOWN_TIMEOUT": "200ms"}), p)
	done := inFlight(t, base, gate)
	start := time.Now()
	require.NoError(t, app.Stop(context.Background()))
	require.Less(t, time.Since(start), 2*time.Second)
	select {
	case <-gate.Cancelled(): // well before /readyz's own 3 s bound
	case <-time.After(time.Second):
		t.Fatal("the stuck handler's context was not cancelled")
	}
	require.NotEqual(t, http.StatusOK, <-done, "the stuck request was cut")
}

// TestOpenAPIDescribesEveryRoute checks both ways that the document and the
// server agree: every operation of the document is served (not 404/405 from
// the router), and every route the server serves is in the document.
func TestOpenAPIDescribesEveryRoute(t *testing.T) {
	t.Parallel()
	served := append(httpapi.Routes(), "GET /internal/v1/gate/config", "POST /internal/v1/gate/report",
		"GET /healthz", "GET /readyz", "GET /metrics", "GET /openapi.json",
		"GET /v1/sessions/{id}/ports/{port}:connect", "POST /v1/sessions/{id}/ports/{port}:sign",
		"GET /v1/sessions/{id}/ports/{port}", "GET /v1/sessions/{id}/ports/{port}/{path}", "POST /v1/sessions/{id}/ports/{port}/{path}",
		"PUT /v1/sessions/{id}/ports/{port}/{path}", "PATCH /v1/sessions/{id}/ports/{port}/{path}",
		"DELETE /v1/sessions/{id}/ports/{port}/{path}")
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(openAPI, &doc))
	require.Equal(t, "3.0.3", doc.OpenAPI)
	var documented []string
	for path, ops := range doc.Paths {
		for method := range ops {
			if method != "parameters" {
				documented = append(documented, strings.ToUpper(method)+" "+path)
			}
		}
	}
	require.ElementsMatch(t, served, documented)

	base, _, _ := started(t, testConfig(t, nil), portfake.NewProvider())
	for _, route := range documented {
		method, path, _ := strings.Cut(route, " ")
		path = strings.NewReplacer("{id}", "s1", "{pid}", "p1").Replace(path) + "?path=/f&root=/w"
		req, err := http.NewRequestWithContext(t.Context(), method, base+path, strings.NewReader("x"))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		require.NotEqual(t, http.StatusMethodNotAllowed, resp.StatusCode, route)
		require.NotContains(t, string(body), "no such endpoint", route)
	}
}

func TestNewLoggerWritesJSON(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	newLogger(&b).Info("hello", "session", "s1")
	var line map[string]any
	require.NoError(t, json.Unmarshal(b.Bytes(), &line))
	require.Equal(t, "hello", line["msg"])
	require.Equal(t, "s1", line["session"])
}

func TestRunServeRefusesBadConfiguration(t *testing.T) {
	t.Parallel()
	require.Equal(t, versioncmd.ExitUsage, runServe([]string{"--backend=podman"}))
	require.Equal(t, versioncmd.ExitUsage, runServe([]string{"--listen=0.0.0.0:0", "--api-token="}))
	require.Equal(t, 0, runServe([]string{"-h"}))
}

func TestDispatch(t *testing.T) {
	t.Parallel()
	require.Equal(t, 0, dispatch([]string{"version"}))
	require.Equal(t, versioncmd.ExitUsage, dispatch([]string{"serve", "extra-argument"}))
}
