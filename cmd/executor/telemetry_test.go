package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/ports"
)

// liveProvider is a ports.Provider without Docker whose sessions exist: a
// provision mints the gate token like a real provider (Generate, Persist,
// through the store it is wired with), and a reap revokes it, so the gate
// endpoints can be driven with it.
type liveProvider struct {
	issuer ports.GateTokenIssuer // set by module: the executor's store
	mu     sync.Mutex
	ids    map[domain.ID]bool
	tokens map[domain.ID]string
	specs  map[domain.ID]sandbox.Spec
}

var _ ports.Provider = (*liveProvider)(nil)

func newLiveProvider() *liveProvider {
	return &liveProvider{ids: map[domain.ID]bool{}, tokens: map[domain.ID]string{}, specs: map[domain.ID]sandbox.Spec{}}
}

func (p *liveProvider) module() fx.Option {
	return fx.Module("provider", fx.Provide(func(store ports.SessionStore) ports.Provider {
		p.issuer = store
		return p
	}))
}

func (p *liveProvider) Provision(ctx context.Context, spec sandbox.Spec) (ports.Sandbox, error) {
	if spec.Gate != nil {
		tok := p.issuer.Generate()
		if err := p.issuer.Persist(ctx, spec.SessionID, tok); err != nil {
			return nil, err
		}
		p.mu.Lock()
		p.tokens[spec.SessionID] = tok
		p.mu.Unlock()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ids[spec.SessionID] = true
	p.specs[spec.SessionID] = spec
	return liveSandbox{}, nil
}

func (p *liveProvider) Attach(_ context.Context, sid domain.ID) (ports.Sandbox, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.ids[sid] {
		return nil, sandbox.ErrNotFound
	}
	return liveSandbox{}, nil
}

func (p *liveProvider) Owned(context.Context) ([]domain.ID, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []domain.ID
	for id := range p.ids {
		out = append(out, id)
	}
	return out, nil
}

func (p *liveProvider) Reap(ctx context.Context, sid domain.ID) error {
	if err := p.issuer.Revoke(ctx, sid); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.ids, sid)
	return nil
}

func (p *liveProvider) Export(context.Context, domain.ID, string) (io.ReadCloser, error) {
	return nil, sandbox.ErrFileNotExist
}

func (p *liveProvider) token(sid domain.ID) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.tokens[sid]
}

// liveSandbox answers every exec with exit 0.
type liveSandbox struct{}

func (liveSandbox) ID() string { return "c0ffee" }
func (liveSandbox) Exec(context.Context, sandbox.ExecRequest) (sandbox.ExecResult, error) {
	return sandbox.ExecResult{Stdout: "ok\n"}, nil
}
func (liveSandbox) ReadFile(context.Context, string) ([]byte, error) {
	return nil, sandbox.ErrFileNotExist
}
func (liveSandbox) ReadFileStream(context.Context, string, int64) (io.ReadCloser, int64, error) {
	return nil, 0, sandbox.ErrFileNotExist
}
func (liveSandbox) WriteFile(context.Context, string, []byte) error { return nil }
func (liveSandbox) WriteFileStream(_ context.Context, _ string, src io.Reader, _ int64) error {
	_, err := io.Copy(io.Discard, src)
	return err
}
func (liveSandbox) WriteFiles(context.Context, []sandbox.FileWrite) error { return nil }
func (liveSandbox) Destroy(context.Context) error                         { return nil }

// startedTraced runs the graph with p and a recording tracer provider.
func startedTraced(t *testing.T, p *liveProvider) (string, *tracetest.SpanRecorder, logFile) {
	t.Helper()
	cfg := testConfig(t, map[string]string{"SANDGATE_CONTROLPLANE_URL": "http://10.0.0.1:7071"})
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.Close() })
	logs := logFile{f}
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	var srv *servers
	app := fxtest.New(t, serveOptions(cfg, newLogger(logs), p.module()),
		fx.Decorate(func(trace.TracerProvider) trace.TracerProvider { return tp }),
		fx.Populate(&srv))
	app.RequireStart()
	t.Cleanup(func() { _ = app.Stop(context.Background()) })
	return "http://" + srv.apiAddr.String(), rec, logs
}

// call sends method url with body and the bearer token, returning the
// status and body.
func call(t *testing.T, method, url, token, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(body))
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// TestTelemetryEndToEnd drives a session with a credential through the API
// and the gate endpoints: the API spans are named by route and carry the
// session id, the provider's spans are their children, /metrics shows the
// requests, provisions, exec durations, live sessions and the gate's
// verdicts, and the log has the session id on every request line and never
// the credential's secret, the gate token or the API token.
func TestTelemetryEndToEnd(t *testing.T) {
	t.Parallel()
	const secret = "cred-secret-never-logged-4242"
	p := newLiveProvider()
	base, rec, logs := startedTraced(t, p)
	sid := domain.MustParseSessionID("ses_telemetry1")

	status, body := call(t, http.MethodPut, base+"/v1/sessions/"+sid.String(), testToken,
		`{"networking":{"type":"limited","allowed_hosts":["api.example.com"]},`+
			`"credentials":[{"id":"api","name":"API_KEY","secret":"`+secret+`","allowed_hosts":["api.example.com"],"locations":["headers"]}]}`)
	require.Equal(t, http.StatusOK, status, body)
	require.NotContains(t, p.specs[sid].Env["API_KEY"], secret, "the sandbox sees a placeholder")
	status, body = call(t, http.MethodPost, base+"/v1/sessions/"+sid.String()+"/exec", testToken, `{"command":"echo $API_KEY"}`)
	require.Equal(t, http.StatusOK, status, body)

	// The gate fetches its config (the body carries the secret) and reports.
	gateToken := p.token(sid)
	require.NotEmpty(t, gateToken)
	status, body = call(t, http.MethodGet, base+"/internal/v1/gate/config", gateToken, "")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, secret)
	status, body = call(t, http.MethodPost, base+"/internal/v1/gate/report", gateToken,
		`{"verdicts":[{"verdict":"denied","reason":"not-allowed","count":2},{"verdict":"allowed","reason":"allowed-host","count":1},`+
			`{"verdict":"denied","reason":"`+secret+`","count":1}]}`)
	require.Equal(t, http.StatusNoContent, status, body)
	status, _ = call(t, http.MethodPost, base+"/internal/v1/gate/report", "", `{"verdicts":[]}`)
	require.Equal(t, http.StatusUnauthorized, status)

	status, metrics := call(t, http.MethodGet, base+"/metrics", "", "")
	require.Equal(t, http.StatusOK, status)
	for _, want := range []string{
		`reason="not-allowed",verdict="denied"} 2`,
		`reason="allowed-host",verdict="allowed"} 1`,
		`reason="other",verdict="denied"} 1`,
		`outcome="ok"} 1`,
		`sandgate_exec_duration_seconds_bucket{`, `le="600"}`,
		`sandgate_exec_duration_seconds_count{`, `sandgate_provisions_total{`,
		`sandgate_sandboxes_live{`,
		`sandgate_api_requests_total{`,
		`route="PUT /v1/sessions/{id}",status="200"} 1`,
		`route="/internal/v1/gate/report",status="401"} 1`,
	} {
		require.Contains(t, metrics, want)
	}
	require.NotContains(t, metrics, secret)

	status, _ = call(t, http.MethodDelete, base+"/v1/sessions/"+sid.String(), testToken, "")
	require.Equal(t, http.StatusNoContent, status)

	// Spans: the API's are named by route, with the session id; the
	// provider's are their children.
	byID := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		byID[s.SpanContext().SpanID()] = s
	}
	var provision, exec sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		switch s.Name() {
		case "Provider.Provision":
			provision = s
		case "Sandbox.Exec":
			exec = s
		}
		for _, kv := range s.Attributes() {
			require.NotContains(t, kv.Value.String(), secret)
			require.NotContains(t, kv.Value.String(), gateToken)
		}
	}
	require.NotNil(t, provision)
	require.NotNil(t, exec)
	for want, child := range map[string]sdktrace.ReadOnlySpan{"PUT /v1/sessions/{id}": provision, "POST /v1/sessions/{id}/exec": exec} {
		parent, ok := byID[child.Parent().SpanID()]
		require.True(t, ok, "%s has a recorded parent", child.Name())
		require.Equal(t, want, parent.Name())
		require.Equal(t, sid.String(), attr(parent, "sandgate.session_id"))
		require.Equal(t, sid.String(), attr(child, "sandgate.session_id"))
	}

	// Logs: one line per API request with the session id; no secret.
	out := logs.String()
	for _, s := range []string{secret, gateToken, testToken} {
		require.NotContains(t, out, s)
	}
	var requestLines int
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), line)
		if m["msg"] == "api request" && strings.HasPrefix(m["path"].(string), "/v1/sessions/") {
			requestLines++
			require.Equal(t, sid.String(), m["session_id"], line)
		}
	}
	require.Equal(t, 3, requestLines)
}

func attr(s sdktrace.ReadOnlySpan, key string) string {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value.String()
		}
	}
	return ""
}
