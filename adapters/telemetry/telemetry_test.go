package telemetry

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
)

// collector is an in-process OTLP gRPC trace collector on loopback.
type collector struct {
	coltracepb.UnimplementedTraceServiceServer
	got chan *coltracepb.ExportTraceServiceRequest
}

func (c *collector) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	c.got <- req
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

// startCollector serves a collector and returns it with its address.
func startCollector(t *testing.T) (*collector, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	c := &collector{got: make(chan *coltracepb.ExportTraceServiceRequest, 16)}
	srv := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(srv, c)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		srv.Stop()
		require.NoError(t, <-done)
	})
	return c, ln.Addr().String()
}

// clearEnv unsets every variable that would enable export.
func clearEnv(t *testing.T) {
	t.Helper()
	for _, v := range append(endpointVars, "OTEL_SDK_DISABLED") {
		t.Setenv(v, "")
	}
}

func TestNoEndpointIsNoop(t *testing.T) {
	clearEnv(t)
	require.False(t, Enabled())
	tp, shutdown, err := NewTracerProvider(context.Background(), "gate")
	require.NoError(t, err)
	require.IsType(t, noop.TracerProvider{}, tp)
	require.NoError(t, shutdown(context.Background()))
}

func TestSDKDisabledIsNoop(t *testing.T) {
	clearEnv(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4317")
	t.Setenv("OTEL_SDK_DISABLED", "TRUE")
	require.False(t, Enabled())
	tp, _, err := NewTracerProvider(context.Background(), "gate")
	require.NoError(t, err)
	require.IsType(t, noop.TracerProvider{}, tp)
}

func TestExportsToCollector(t *testing.T) {
	for _, v := range endpointVars {
		t.Run(v, func(t *testing.T) {
			clearEnv(t)
			c, addr := startCollector(t)
			t.Setenv(v, "http://"+addr)
			require.True(t, Enabled())
			tp, shutdown, err := NewTracerProvider(context.Background(), "sandgate-gate")
			require.NoError(t, err)
			_, span := tp.Tracer("test").Start(context.Background(), "egress_request", trace.WithSpanKind(trace.SpanKindClient))
			span.End()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			// Shutdown flushes the queue: the span is exported before it
			// returns.
			require.NoError(t, shutdown(ctx))
			var req *coltracepb.ExportTraceServiceRequest
			select {
			case req = <-c.got:
			case <-ctx.Done():
				require.FailNow(t, "the collector received nothing")
			}
			require.Len(t, req.GetResourceSpans(), 1)
			rs := req.GetResourceSpans()[0]
			var service string
			for _, kv := range rs.GetResource().GetAttributes() {
				if kv.GetKey() == "service.name" {
					service = kv.GetValue().GetStringValue()
				}
			}
			require.Equal(t, "sandgate-gate", service)
			require.Len(t, rs.GetScopeSpans(), 1)
			spans := rs.GetScopeSpans()[0].GetSpans()
			require.Len(t, spans, 1)
			require.Equal(t, "egress_request", spans[0].GetName())
			require.Equal(t, tracepb.Span_SPAN_KIND_CLIENT, spans[0].GetKind())
		})
	}
}

// TestDeadCollectorNeverBlocks: with the endpoint on a closed loopback port,
// starting and ending far more spans than the queue holds returns promptly
// (they are dropped, not waited for), and shutdown keeps to its deadline.
func TestDeadCollectorNeverBlocks(t *testing.T) {
	clearEnv(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+addr)
	tp, shutdown, err := NewTracerProvider(context.Background(), "gate")
	require.NoError(t, err)
	tr := tp.Tracer("test")
	start := time.Now()
	for range 10_000 {
		_, span := tr.Start(context.Background(), "egress_request")
		span.End()
	}
	// An export attempt alone takes longer than this (its timeout is 10 s):
	// a processor that waited for the collector could not finish in time.
	require.Less(t, time.Since(start), 3*time.Second)

	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	start = time.Now()
	_ = shutdown(ctx) // a deadline error is expected: nothing can be flushed
	require.Less(t, time.Since(start), 5*time.Second)
}
