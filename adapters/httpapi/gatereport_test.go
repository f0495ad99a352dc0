package httpapi

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/sandgate/sandgate/core/gatewire"
)

// reportEnv is the report handler on newEnv's store with a manual reader.
type reportEnv struct {
	*env
	reader *sdkmetric.ManualReader
	url    string
}

// verdictsMetric is telemetry.VerdictsMetric.
const verdictsMetric = "sandgate.gate.verdicts"

func newReportEnv(t *testing.T) *reportEnv {
	t.Helper()
	e := newEnv(t)
	reader := sdkmetric.NewManualReader()
	// The counter under telemetry.VerdictsMetric's name (an adapter may
	// not import another, so the test declares its own).
	verdicts, err := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)).Meter("test").Int64Counter(verdictsMetric)
	require.NoError(t, err)
	h := NewGateReportHandler(e.store, verdicts, nil)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &reportEnv{env: e, reader: reader, url: srv.URL}
}

func (e *reportEnv) post(t *testing.T, path, body string, auth ...string) reply {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url+path, strings.NewReader(body))
	require.NoError(t, err)
	for _, a := range auth {
		req.Header.Add("Authorization", a)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { require.NoError(t, resp.Body.Close()) }()
	got, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return reply{status: resp.StatusCode, header: resp.Header, body: got}
}

// counts returns the verdicts counter by "verdict/reason".
func (e *reportEnv) counts(t *testing.T) map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, e.reader.Collect(context.Background(), &rm))
	out := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != verdictsMetric {
				continue
			}
			sum, ok := m.Data.(metricdata.Sum[int64])
			require.True(t, ok, "a counter")
			require.True(t, sum.IsMonotonic)
			for _, dp := range sum.DataPoints {
				v, _ := dp.Attributes.Value("verdict")
				r, _ := dp.Attributes.Value("reason")
				require.Equal(t, 2, dp.Attributes.Len(), "verdict and reason only")
				out[v.AsString()+"/"+r.AsString()] = dp.Value
			}
		}
	}
	return out
}

func TestGateReportCounts(t *testing.T) {
	t.Parallel()
	e := newReportEnv(t)
	_, token := e.session(t, testSecret)
	r := e.post(t, gatewire.ReportPath, `{"verdicts":[{"verdict":"denied","reason":"not-allowed","count":2},`+
		`{"verdict":"allowed","reason":"allowed-host","count":5},{"verdict":"denied","reason":"evil.example.com","count":1}]}`,
		"Bearer "+token)
	require.Equal(t, http.StatusNoContent, r.status, "body: %s", r.body)
	r = e.post(t, gatewire.ReportPath, `{"verdicts":[{"verdict":"denied","reason":"not-allowed","count":3}]}`, "Bearer "+token)
	require.Equal(t, http.StatusNoContent, r.status)
	require.Equal(t, map[string]int64{
		"denied/not-allowed": 5, "allowed/allowed-host": 5, "denied/other": 1,
	}, e.counts(t))
}

func TestGateReportRefusals(t *testing.T) {
	t.Parallel()
	e := newReportEnv(t)
	_, token := e.session(t, testSecret)
	good := `{"verdicts":[{"verdict":"denied","reason":"floor","count":1}]}`
	revokedSID, revokedToken := e.session(t, testSecret)
	require.NoError(t, e.store.Revoke(context.Background(), revokedSID))
	tests := []struct {
		name, path, body string
		auth             []string
		status           int
		code             string
	}{
		{"no token", gatewire.ReportPath, good, nil, 401, CodeUnauthorized},
		{"malformed token", gatewire.ReportPath, good, []string{"Bearer nope"}, 401, CodeUnauthorized},
		{"revoked token", gatewire.ReportPath, good, []string{"Bearer " + revokedToken}, 401, CodeUnauthorized},
		{"two tokens", gatewire.ReportPath, good, []string{"Bearer " + token, "Bearer " + token}, 401, CodeUnauthorized},
		{"other path", "/internal/v1/gate/reports", good, []string{"Bearer " + token}, 404, CodeNotFound},
		{"bad verdict", gatewire.ReportPath, `{"verdicts":[{"verdict":"x","reason":"floor","count":1}]}`, []string{"Bearer " + token}, 400, CodeInvalidArgument},
		{"negative count", gatewire.ReportPath, `{"verdicts":[{"verdict":"denied","reason":"floor","count":-5}]}`, []string{"Bearer " + token}, 400, CodeInvalidArgument},
		{"unknown field", gatewire.ReportPath, `{"verdicts":[],"extra":1}`, []string{"Bearer " + token}, 400, CodeInvalidArgument},
		{"too large", gatewire.ReportPath, `{"verdicts":[]}` + strings.Repeat(" ", 32<<10), []string{"Bearer " + token}, 413, CodeInvalidArgument},
	}
	for _, tt := range tests {
		r := e.post(t, tt.path, tt.body, tt.auth...)
		requireError(t, r, tt.status, tt.code)
	}
	// GET is not a report.
	req, err := http.NewRequest(http.MethodGet, e.url+gatewire.ReportPath, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	require.Equal(t, http.MethodPost, resp.Header.Get("Allow"))
	require.Empty(t, e.counts(t), "no refused report counted anything")
}
