package telemetry

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// Each counter is published under its name and the scope it always had:
// a renamed scope would change every series' labels.
func TestInstrumentsNamesAndScopes(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	want := map[string]string{
		VerdictsMetric:  "github.com/sandgate/sandgate/adapters/httpapi",
		RequestsMetric:  "github.com/sandgate/sandgate/cmd/executor",
		ReapsMetric:     "github.com/sandgate/sandgate/app",
		DataPlaneMetric: "github.com/sandgate/sandgate/cmd/executor",
	}
	for _, mk := range []func(metric.MeterProvider) (metric.Int64Counter, error){GateVerdicts, APIRequests, Reaps, DataPlane} {
		c, err := mk(mp)
		require.NoError(t, err)
		c.Add(context.Background(), 1)
	}
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	got := map[string]string{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			got[m.Name] = sm.Scope.Name
		}
	}
	require.Equal(t, want, got)

	c, err := GateVerdicts(nil) // a nil provider counts nothing
	require.NoError(t, err)
	c.Add(context.Background(), 1)
}
