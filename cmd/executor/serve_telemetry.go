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
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/fx"

	"github.com/sandgate/sandgate/adapters/telemetry"
	"github.com/sandgate/sandgate/ports"
)

// serviceName is the executor's service.name in its spans and metrics.
const serviceName = "executor"

// telemetryModule provides the meter provider behind /metrics (and over
// OTLP when OTEL_EXPORTER_OTLP_* names an endpoint) and installs the OTLP
// tracer provider (a no-op without one) in OnStart. The provider's spans
// and metrics come from decorateProvider, which serveOptions applies at the
// root (an fx decoration reaches only its own module's scope).
var telemetryModule = fx.Module("telemetry",
	fx.Provide(newMetrics, globalTracer),
	fx.Invoke(installTracing),
)

// globalTracer is the tracer provider the executor's spans start from: the
// global one, which forwards to the provider installTracing sets in
// OnStart (so it can be taken before then). Tests replace it.
func globalTracer() trace.TracerProvider { return otel.GetTracerProvider() }

// decorateProvider wraps the configured provider with a span per operation
// and the provider metrics.
func decorateProvider(p ports.Provider, tp trace.TracerProvider, mp metric.MeterProvider, log *slog.Logger) (ports.Provider, error) {
	return telemetry.NewProvider(p, telemetry.ProviderOptions{
		Tracer: tp, Meter: mp, Logger: log.With("component", "provider"),
	})
}

// metricsHandler serves the registry in the Prometheus text format.
type metricsHandler http.Handler

// newMetrics builds a registry of its own (Go runtime, process, and every
// OpenTelemetry instrument of the meter provider), so /metrics shows nothing
// a library registered globally. A pull exporter starts nothing. With an
// OTLP endpoint configured, the same instruments are also pushed by a
// periodic reader: its goroutine starts with it (the SDK offers no later
// start), but it only ticks, connects lazily and exports nothing before the
// first interval; OnStop flushes it within the stop bound.
func newMetrics(lc fx.Lifecycle, log *slog.Logger) (metric.MeterProvider, metricsHandler, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	exp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return nil, nil, fmt.Errorf("prometheus exporter: %w", err)
	}
	res, err := telemetry.Resource(context.Background(), serviceName)
	if err != nil {
		return nil, nil, err
	}
	opts := []sdkmetric.Option{sdkmetric.WithResource(res), sdkmetric.WithReader(exp)}
	otlp, err := telemetry.NewMetricReader(context.Background())
	if err != nil {
		return nil, nil, err
	}
	if otlp != nil {
		opts = append(opts, sdkmetric.WithReader(otlp))
	}
	mp := sdkmetric.NewMeterProvider(opts...)
	lc.Append(fx.Hook{
		OnStart: func(context.Context) error {
			log.Info("metrics", "otlp", otlp != nil)
			return nil
		},
		OnStop: mp.Shutdown,
	})
	return mp, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), nil
}

// installTracing sets the global tracer provider and the W3C propagator in
// OnStart (an SDK provider starts its batch goroutine when built) and flushes
// it in OnStop.
func installTracing(lc fx.Lifecycle, log *slog.Logger) {
	var shutdown func(context.Context) error
	lc.Append(fx.Hook{
		OnStart: func(ctx context.Context) error {
			// Failed exports are logged as JSON among the other lines,
			// not printed as plain text by the SDK's default handler.
			otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
				log.Warn("telemetry", "err", err)
			}))
			tp, stop, err := telemetry.NewTracerProvider(ctx, serviceName)
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
