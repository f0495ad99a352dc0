// Package telemetry is sandgate's OpenTelemetry adapter. It builds the
// tracer provider and the OTLP metric reader of sandgate's binaries from the
// standard OTEL_* environment (spans and metrics are exported over OTLP gRPC
// when an endpoint is configured, and nothing is done at all otherwise), and
// decorates a ports.Provider with spans and metrics (NewProvider).
//
// Export never slows the caller (CONTRACT B-5): spans wait in a bounded
// queue that drops when full, and a dead or slow collector costs dropped
// spans, never a blocked request.
package telemetry

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	"google.golang.org/grpc"
)

// The batch processor's bounds. The queue holds a few seconds of a busy
// gate's spans; when it is full new spans are dropped (the processor is not
// WithBlocking), so proxying never waits for the collector.
const (
	MaxQueueSize       = 2048
	MaxExportBatchSize = 512
	BatchTimeout       = 5 * time.Second
	ExportTimeout      = 10 * time.Second
)

// endpointVars configure an OTLP endpoint; with neither set there is no
// exporter.
var endpointVars = []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"}

// Enabled reports whether the environment names an OTLP endpoint for
// traces, OTEL_SDK_DISABLED is not "true" and OTEL_TRACES_EXPORTER is not
// "none".
func Enabled() bool {
	if sdkDisabled() || strings.EqualFold(strings.TrimSpace(os.Getenv("OTEL_TRACES_EXPORTER")), "none") {
		return false
	}
	return anySet(endpointVars)
}

// NewTracerProvider returns the tracer provider for the binary called service
// (the resource's service.name) and the function that flushes and stops it.
//
// With OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT set,
// it is an SDK provider exporting over OTLP gRPC through a bounded,
// non-blocking batch processor; the exporter reads the rest of the standard
// environment itself (headers, certificates, timeout, compression; an http://
// endpoint means plaintext). It never dials through a *_PROXY variable.
// Connecting is lazy: an unreachable collector is not an error here.
// Otherwise, and when OTEL_SDK_DISABLED=true, it is a no-op provider and
// shutdown does nothing.
//
// shutdown flushes what is queued within ctx and stops the exporter; call it
// once, with a deadline (a dead collector makes it wait for that deadline).
func NewTracerProvider(ctx context.Context, service string) (trace.TracerProvider, func(context.Context) error, error) {
	if !Enabled() {
		return noop.NewTracerProvider(), func(context.Context) error { return nil }, nil
	}
	exp, err := otlptracegrpc.New(ctx,
		// gRPC would otherwise honour HTTPS_PROXY: the gate's traffic never
		// follows proxy variables (C-GW-6).
		otlptracegrpc.WithDialOption(grpc.WithNoProxy()),
	)
	if err != nil {
		return nil, nil, fmt.Errorf("telemetry: OTLP gRPC exporter: %w", err)
	}
	res, err := Resource(ctx, service)
	if err != nil {
		// Only detectors can fail, and these do not; stop the exporter anyway.
		_ = exp.Shutdown(ctx)
		return nil, nil, err
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithResource(res),
		sdktrace.WithBatcher(exp,
			sdktrace.WithMaxQueueSize(MaxQueueSize),
			sdktrace.WithMaxExportBatchSize(MaxExportBatchSize),
			sdktrace.WithBatchTimeout(BatchTimeout),
			sdktrace.WithExportTimeout(ExportTimeout),
		),
	)
	return tp, tp.Shutdown, nil
}
