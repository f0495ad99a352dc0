package telemetry

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/ports/portfake"
)

const secretEnv = "env-secret-value-0123"

// world is a decorated fake with a span recorder, a manual metric reader
// and a captured log.
type world struct {
	fake   *portfake.Provider
	p      *Provider
	spans  *tracetest.SpanRecorder
	tp     *sdktrace.TracerProvider
	reader *sdkmetric.ManualReader
	log    *bytes.Buffer
}

func newWorld(t *testing.T, ttl time.Duration) *world {
	t.Helper()
	w := &world{fake: portfake.NewProvider(), spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader(), log: &bytes.Buffer{}}
	w.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(w.spans))
	var err error
	w.p, err = NewProvider(w.fake, ProviderOptions{
		Tracer: w.tp, Meter: sdkmetric.NewMeterProvider(sdkmetric.WithReader(w.reader)),
		Logger: slog.New(slog.NewJSONHandler(w.log, &slog.HandlerOptions{Level: slog.LevelWarn})), LiveTTL: ttl,
	})
	require.NoError(t, err)
	return w
}

func attrOf(s sdktrace.ReadOnlySpan, k attribute.Key) attribute.Value {
	for _, kv := range s.Attributes() {
		if kv.Key == k {
			return kv.Value
		}
	}
	return attribute.Value{}
}

func (w *world) metrics(t *testing.T) map[string]metricdata.Aggregation {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, w.reader.Collect(context.Background(), &rm))
	out := map[string]metricdata.Aggregation{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			out[m.Name] = m.Data
		}
	}
	return out
}

func TestProviderSpansAreChildrenWithSessionIDs(t *testing.T) {
	t.Parallel()
	w := newWorld(t, time.Hour)
	ctx, parent := w.tp.Tracer("test").Start(context.Background(), "PUT /v1/sessions/{id}")
	spec := sandbox.Spec{SessionID: domain.MustParseSessionID("ses_a"), Image: "img", Env: map[string]string{"API_KEY": secretEnv}}
	sb, err := w.p.Provision(ctx, spec)
	require.NoError(t, err)
	// Files a session's user wrote, behind the decorator's back.
	w.fake.Box(spec.SessionID).Put("/workspace/"+secretEnv, []byte(secretEnv))
	w.fake.Box(spec.SessionID).Put("/x", []byte(secretEnv))
	_, err = sb.Exec(ctx, sandbox.ExecRequest{Command: "echo " + secretEnv, Timeout: time.Second})
	require.NoError(t, err)
	_, err = sb.ReadFile(ctx, "/workspace/"+secretEnv)
	require.NoError(t, err)
	rc, _, err := sb.ReadFileStream(ctx, "/x", 100)
	require.NoError(t, err)
	require.NoError(t, rc.Close())
	require.NoError(t, sb.WriteFile(ctx, "/x", []byte(secretEnv)))
	require.NoError(t, sb.WriteFileStream(ctx, "/x", strings.NewReader(secretEnv), int64(len(secretEnv))))
	require.NoError(t, sb.WriteFiles(ctx, []sandbox.FileWrite{{Path: "/a", Data: []byte(secretEnv)}}))
	_, err = sb.Stat(ctx, "/workspace/"+secretEnv)
	require.NoError(t, err)
	_, err = sb.List(ctx, "/workspace")
	require.NoError(t, err)
	require.NoError(t, sb.Mkdir(ctx, "/workspace/"+secretEnv+"d", true))
	require.NoError(t, sb.Remove(ctx, "/workspace/"+secretEnv+"d", true))
	_, err = w.p.Attach(ctx, domain.MustParseSessionID("ses_a"))
	require.NoError(t, err)
	rc, err = w.p.Export(ctx, domain.MustParseSessionID("ses_a"), "/workspace")
	require.NoError(t, err)
	require.NoError(t, rc.Close())
	_, err = w.p.Owned(ctx)
	require.NoError(t, err)
	require.NoError(t, sb.Destroy(ctx))
	require.NoError(t, w.p.Reap(ctx, domain.MustParseSessionID("ses_a")))
	parent.End()

	ended := w.spans.Ended()
	var names []string
	for _, s := range ended {
		names = append(names, s.Name())
		if s.Name() == parent.(sdktrace.ReadOnlySpan).Name() {
			continue
		}
		require.Equal(t, parent.SpanContext().SpanID(), s.Parent().SpanID(), "%s is a child of the API span", s.Name())
		require.Equal(t, codes.Unset, s.Status().Code, s.Name())
		if s.Name() != "Provider.Owned" {
			require.Equal(t, "ses_a", attrOf(s, SessionIDKey).AsString(), s.Name())
		}
		for _, kv := range s.Attributes() {
			require.NotContains(t, kv.Value.String(), secretEnv, "%s %s", s.Name(), kv.Key)
		}
	}
	require.Equal(t, []string{"Provider.Provision", "Sandbox.Exec", "Sandbox.ReadFile", "Sandbox.ReadFileStream",
		"Sandbox.WriteFile", "Sandbox.WriteFileStream", "Sandbox.WriteFiles", "Sandbox.Stat", "Sandbox.List", "Sandbox.Mkdir",
		"Sandbox.Remove", "Provider.Attach", "Provider.Export",
		"Provider.Owned", "Sandbox.Destroy", "Provider.Reap", "PUT /v1/sessions/{id}"}, names)
	exec := ended[1]
	require.Equal(t, int64(3), attrOf(exec, "sandgate.exec.exit_code").AsInt64())
	require.Equal(t, int64(1000), attrOf(exec, "sandgate.exec.timeout_ms").AsInt64())
	require.Equal(t, "ctr-ses_a", attrOf(exec, "sandgate.sandbox_id").AsString())
}

func TestProviderErrorsRecordedAndLogged(t *testing.T) {
	t.Parallel()
	w := newWorld(t, time.Hour)
	ctx := context.Background()
	boom := errors.New("engine exploded")
	w.fake.Fail(portfake.OpProvision, boom)
	_, err := w.p.Provision(ctx, sandbox.Spec{SessionID: domain.MustParseSessionID("ses_b")})
	require.ErrorIs(t, err, boom)
	_, err = w.p.Attach(ctx, domain.MustParseSessionID("ses_nope"))
	require.ErrorIs(t, err, sandbox.ErrNotFound)

	ended := w.spans.Ended()
	require.Len(t, ended, 2)
	var recorded []string
	for _, s := range ended {
		require.Equal(t, codes.Error, s.Status().Code, s.Name())
		require.Len(t, s.Events(), 1, "the error is recorded")
		for _, a := range s.Events()[0].Attributes {
			recorded = append(recorded, a.Value.String())
		}
	}
	// Spans record the error's class, never its text (which can name
	// paths): the sentinel, or a fixed text for the backend's own failure.
	require.Contains(t, recorded, sandbox.ErrNotFound.Error())
	require.Contains(t, recorded, errBackend.Error())
	require.NotContains(t, strings.Join(recorded, " "), "engine exploded")
	// The backend's failure is logged with the session id; the caller's
	// (a session that does not exist) is not worth a warning.
	log := w.log.String()
	require.Contains(t, log, `"session_id":"ses_b"`)
	require.Contains(t, log, "engine exploded")
	require.NotContains(t, log, "ses_nope")
}

func TestProviderMetrics(t *testing.T) {
	t.Parallel()
	w := newWorld(t, time.Hour)
	ctx := context.Background()
	sb, err := w.p.Provision(ctx, sandbox.Spec{SessionID: domain.MustParseSessionID("ses_c")})
	require.NoError(t, err)
	w.fake.Fail(portfake.OpProvision, errors.New("no"))
	_, err = w.p.Provision(ctx, sandbox.Spec{SessionID: domain.MustParseSessionID("ses_d")})
	require.Error(t, err)
	w.fake.Hook(portfake.OpExec, func(context.Context, domain.ID) error { time.Sleep(20 * time.Millisecond); return nil })
	_, err = sb.Exec(ctx, sandbox.ExecRequest{Command: "true"})
	require.NoError(t, err)

	m := w.metrics(t)
	prov, ok := m[ProvisionsMetric].(metricdata.Sum[int64])
	require.True(t, ok)
	byOutcome := map[string]int64{}
	for _, dp := range prov.DataPoints {
		v, _ := dp.Attributes.Value("outcome")
		byOutcome[v.AsString()] = dp.Value
	}
	require.Equal(t, map[string]int64{"ok": 1, "error": 1}, byOutcome)

	h, ok := m[ExecDurationMetric].(metricdata.Histogram[float64])
	require.True(t, ok)
	require.Len(t, h.DataPoints, 1)
	dp := h.DataPoints[0]
	require.Equal(t, uint64(1), dp.Count)
	require.Equal(t, ExecBuckets, dp.Bounds)
	require.GreaterOrEqual(t, dp.Sum, 0.02)
	require.Less(t, dp.Sum, 5.0)
	v, _ := dp.Attributes.Value("outcome")
	require.Equal(t, "ok", v.AsString())
}

// TestLiveGaugeCaches: scrapes call Owned at most once per TTL; an Owned
// call through the decorator refreshes the count for free; a failing
// Owned reports nothing.
func TestLiveGaugeCaches(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 200*time.Millisecond)
	ctx := context.Background()
	_, err := w.p.Provision(ctx, sandbox.Spec{SessionID: domain.MustParseSessionID("ses_e")})
	require.NoError(t, err)
	live := func() (int64, bool) {
		g, ok := w.metrics(t)[LiveMetric].(metricdata.Gauge[int64])
		if !ok || len(g.DataPoints) == 0 {
			return 0, false
		}
		return g.DataPoints[0].Value, true
	}
	for range 5 {
		n, ok := live()
		require.True(t, ok)
		require.Equal(t, int64(1), n)
	}
	require.Equal(t, 1, w.fake.Calls(portfake.OpOwned), "five scrapes, one engine call")

	_, err = w.p.Provision(ctx, sandbox.Spec{SessionID: domain.MustParseSessionID("ses_f")})
	require.NoError(t, err)
	_, err = w.p.Owned(ctx) // e.g. the reaper's tick
	require.NoError(t, err)
	n, _ := live()
	require.Equal(t, int64(2), n)
	require.Equal(t, 2, w.fake.Calls(portfake.OpOwned))
	for _, s := range w.spans.Ended() {
		require.NotEqual(t, "Provider.Owned", s.Name(), "an Owned without a caller's span is not traced")
	}

	time.Sleep(250 * time.Millisecond)
	w.fake.Fail(portfake.OpOwned, errors.New("daemon away"))
	_, ok := live()
	require.False(t, ok, "no stale number when the engine cannot be asked")
}
