package telemetry

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/grpc"
)

// metricCollector is an in-process OTLP gRPC metrics collector.
type metricCollector struct {
	colmetricpb.UnimplementedMetricsServiceServer
	got chan *colmetricpb.ExportMetricsServiceRequest
}

func (c *metricCollector) Export(_ context.Context, req *colmetricpb.ExportMetricsServiceRequest) (*colmetricpb.ExportMetricsServiceResponse, error) {
	c.got <- req
	return &colmetricpb.ExportMetricsServiceResponse{}, nil
}

func clearMetricEnv(t *testing.T) {
	t.Helper()
	for _, v := range append(metricEndpointVars, "OTEL_SDK_DISABLED", "OTEL_METRICS_EXPORTER") {
		t.Setenv(v, "")
	}
}

func TestMetricsEnabled(t *testing.T) {
	tests := []struct {
		env  map[string]string
		want bool
	}{
		{map[string]string{}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://127.0.0.1:4317"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317", "OTEL_METRICS_EXPORTER": "none"}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317", "OTEL_SDK_DISABLED": "true"}, false},
	}
	for _, tt := range tests {
		clearMetricEnv(t)
		for k, v := range tt.env {
			t.Setenv(k, v)
		}
		require.Equal(t, tt.want, MetricsEnabled(), "%v", tt.env)
		r, err := NewMetricReader(context.Background())
		require.NoError(t, err)
		require.Equal(t, tt.want, r != nil)
		if r != nil {
			require.NoError(t, r.Shutdown(context.Background()))
		}
	}
}

// TestMetricReaderExports: with the endpoint set, the meter provider's
// instruments reach the collector (Shutdown flushes them).
func TestMetricReaderExports(t *testing.T) {
	clearMetricEnv(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	c := &metricCollector{got: make(chan *colmetricpb.ExportMetricsServiceRequest, 16)}
	srv := grpc.NewServer()
	colmetricpb.RegisterMetricsServiceServer(srv, c)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	t.Setenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "http://"+ln.Addr().String())

	r, err := NewMetricReader(context.Background())
	require.NoError(t, err)
	require.NotNil(t, r)
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	ctr, err := mp.Meter("test").Int64Counter("sandgate.test")
	require.NoError(t, err)
	ctr.Add(context.Background(), 7)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, mp.Shutdown(ctx))
	select {
	case req := <-c.got:
		m := req.GetResourceMetrics()[0].GetScopeMetrics()[0].GetMetrics()[0]
		require.Equal(t, "sandgate.test", m.GetName())
		require.Equal(t, int64(7), m.GetSum().GetDataPoints()[0].GetAsInt())
	case <-ctx.Done():
		require.FailNow(t, "the collector received nothing")
	}
}

// TestDeadMetricCollectorNeverBlocks: recording is immediate and shutdown
// keeps to its deadline when nothing listens.
func TestDeadMetricCollectorNeverBlocks(t *testing.T) {
	clearMetricEnv(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+addr)
	r, err := NewMetricReader(context.Background())
	require.NoError(t, err)
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	ctr, err := mp.Meter("test").Int64Counter("sandgate.test")
	require.NoError(t, err)
	start := time.Now()
	for range 100_000 {
		ctr.Add(context.Background(), 1)
	}
	require.Less(t, time.Since(start), 3*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	start = time.Now()
	_ = mp.Shutdown(ctx) // a deadline error is expected
	require.Less(t, time.Since(start), 5*time.Second)
}
