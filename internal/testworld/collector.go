package testworld

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
)

// Collector is an OTLP/gRPC trace collector on the test network's gateway:
// every gate the environment provisions exports its spans here.
type Collector struct {
	collectortrace.UnimplementedTraceServiceServer

	// Endpoint is the collector's URL as gates see it.
	Endpoint string

	mu      sync.Mutex
	spans   []*tracepb.Span
	arrived chan struct{} // closed and replaced on every export
}

// Export keeps every span of the request.
func (c *Collector) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			c.spans = append(c.spans, ss.GetSpans()...)
		}
	}
	close(c.arrived)
	c.arrived = make(chan struct{})
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

// WaitSpans waits, bounded by timeout, until done holds for the spans
// received so far, and returns them.
func (c *Collector) WaitSpans(t *testing.T, timeout time.Duration, done func([]*tracepb.Span) bool) []*tracepb.Span {
	t.Helper()
	deadline := time.After(timeout)
	for {
		c.mu.Lock()
		spans := append([]*tracepb.Span(nil), c.spans...)
		arrived := c.arrived
		c.mu.Unlock()
		if done(spans) {
			return spans
		}
		select {
		case <-arrived:
		case <-deadline:
			require.FailNow(t, "the collector did not get the expected spans", "within %s; %d spans so far", timeout, len(spans))
		}
	}
}

// startCollector serves the collector on the gateway for the test's
// duration.
func (e *Env) startCollector(t *testing.T) {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(e.Gateway.String(), "0"))
	require.NoError(t, err)
	c := &Collector{Endpoint: "http://" + ln.Addr().String(), arrived: make(chan struct{})}
	srv := grpc.NewServer()
	collectortrace.RegisterTraceServiceServer(srv, c)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	e.Collector = c
}
