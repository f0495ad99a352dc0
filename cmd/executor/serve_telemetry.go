package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.uber.org/fx"

	"github.com/sandgate/sandgate/adapters/telemetry"
)

// telemetryModule provides the meter provider behind /metrics and installs
// the OTLP tracer provider (a no-op without OTEL_EXPORTER_OTLP_*) in OnStart.
var telemetryModule = fx.Module("telemetry",
	fx.Provide(newMetrics),
	fx.Invoke(installTracing),
)

// metricsHandler serves the registry in the Prometheus text format.
type metricsHandler http.Handler

// newMetrics builds a registry of its own (Go runtime, process, and every
// OpenTelemetry instrument of the meter provider), so /metrics shows nothing
// a library registered globally. A pull exporter starts nothing.
func newMetrics(lc fx.Lifecycle) (metric.MeterProvider, metricsHandler, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	exp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return nil, nil, fmt.Errorf("prometheus exporter: %w", err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	lc.Append(fx.StopHook(mp.Shutdown))
	return mp, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), nil
}

// installTracing sets the global tracer provider and the W3C propagator in
// OnStart (an SDK provider starts its batch goroutine when built) and flushes
// it in OnStop.
func installTracing(lc fx.Lifecycle, log *slog.Logger) {
	var shutdown func(context.Context) error
	lc.Append(fx.Hook{
		OnStart: func(ctx context.Context) error {
			tp, stop, err := telemetry.NewTracerProvider(ctx, "executor")
			if err != nil {
				return fmt.Errorf("tracing: %w", err)
			}
			otel.SetTracerProvider(tp)
			otel.SetTextMapPropagator(propagation.TraceContext{})
			shutdown = stop
			log.Info("tracing", "otlp", telemetry.Enabled())
			return nil
		},
		OnStop: func(ctx context.Context) error {
			if shutdown == nil {
				return nil
			}
			return shutdown(ctx)
		},
	})
}
