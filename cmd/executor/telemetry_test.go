package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/ports/portfake"
)

// startedTraced runs the graph with p and a recording tracer provider.
func startedTraced(t *testing.T, p *portfake.Provider) (string, *tracetest.SpanRecorder, logFile) {
	t.Helper()
	cfg := testConfig(t, map[string]string{"SANDGATE_CONTROLPLANE_URL": "http://10.0.0.1:7071"})
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.Close() })
	logs := logFile{f}
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	var srv *servers
	app := fxtest.New(t, serveOptions(cfg, newLogger(logs), fakeModule(p)),
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
	p := portfake.NewProvider()
	base, rec, logs := startedTraced(t, p)
	sid := domain.MustParseSessionID("ses_telemetry1")

	status, body := call(t, http.MethodPut, base+"/v1/sessions/"+sid.String(), testToken,
		`{"networking":{"type":"limited","allowed_hosts":["api.example.com"]},`+
			`"credentials":[{"id":"api","name":"API_KEY","secret":"`+secret+`","allowed_hosts":["api.example.com"],"locations":["headers"]}]}`)
	require.Equal(t, http.StatusOK, status, body)
	specs := p.Specs()
	require.Len(t, specs, 1)
	require.NotContains(t, specs[0].Env["API_KEY"], secret, "the sandbox sees a placeholder")
	status, body = call(t, http.MethodPost, base+"/v1/sessions/"+sid.String()+"/exec", testToken, `{"command":"echo $API_KEY"}`)
	require.Equal(t, http.StatusOK, status, body)

	// The gate fetches its config (the body carries the secret) and reports.
	gateToken := p.Token(sid)
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
