package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/sandgate/sandgate/adapters/telemetry"
)

// TestDataPlaneCounter: each sandbox operation is counted under the path
// that carried it, so /metrics shows how much still falls back.
func TestDataPlaneCounter(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	observe, err := dataPlaneCounter(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	require.NoError(t, err)
	ctx := context.Background()
	observe(ctx, true)
	observe(ctx, true)
	observe(ctx, false)
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(ctx, &rm))
	got := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != telemetry.DataPlaneMetric {
				continue
			}
			for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
				path, _ := dp.Attributes.Value("path")
				got[path.AsString()] = dp.Value
			}
		}
	}
	require.Equal(t, map[string]int64{"agent": 2, "fallback": 1}, got)
}
