package telemetry

import (
	"context"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"google.golang.org/grpc"
)

// metricEndpointVars configure an OTLP endpoint for metrics.
var metricEndpointVars = []string{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"}

// MetricsEnabled reports whether the environment names an OTLP endpoint for
// metrics, OTEL_SDK_DISABLED is not "true" and OTEL_METRICS_EXPORTER is not
// "none".
func MetricsEnabled() bool {
	if sdkDisabled() || strings.EqualFold(strings.TrimSpace(os.Getenv("OTEL_METRICS_EXPORTER")), "none") {
		return false
	}
	return anySet(metricEndpointVars)
}

// NewMetricReader returns a periodic reader exporting over OTLP gRPC when
// MetricsEnabled, nil otherwise; add it to the meter provider beside the
// Prometheus one. The exporter reads the rest of the standard environment
// itself (headers, certificates, timeout, compression; an http:// endpoint
// means plaintext) and the reader OTEL_METRIC_EXPORT_INTERVAL (60 s by
// default) and OTEL_METRIC_EXPORT_TIMEOUT. Export runs on the reader's own
// goroutine, which starts with the reader: instruments never wait for the
// collector, and a dead one costs that goroutine's failed exports only.
// Connecting is lazy, so an unreachable collector is not an error here.
func NewMetricReader(ctx context.Context) (metric.Reader, error) {
	if !MetricsEnabled() {
		return nil, nil
	}
	exp, err := otlpmetricgrpc.New(ctx, otlpmetricgrpc.WithDialOption(grpc.WithNoProxy()))
	if err != nil {
		return nil, fmt.Errorf("telemetry: OTLP gRPC metric exporter: %w", err)
	}
	return metric.NewPeriodicReader(exp), nil
}

// Resource describes the binary called service (service.name) and the SDK.
func Resource(ctx context.Context, service string) (*resource.Resource, error) {
	res, err := resource.New(ctx,
		resource.WithTelemetrySDK(),
		resource.WithSchemaURL(semconv.SchemaURL),
		resource.WithAttributes(semconv.ServiceName(service)),
	)
	if err != nil {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	return res, nil
}

func sdkDisabled() bool {
	return strings.EqualFold(strings.TrimSpace(os.Getenv("OTEL_SDK_DISABLED")), "true")
}

func anySet(vars []string) bool {
	for _, v := range vars {
		if strings.TrimSpace(os.Getenv(v)) != "" {
			return true
		}
	}
	return false
}
