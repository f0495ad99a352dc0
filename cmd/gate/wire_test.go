package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/app/gate"
)

// TestTracingReachesTheProxy: the proxy built after the telemetry step gets
// the tracer provider that step made (gate.Serve calls them in that order).
func TestTracingReachesTheProxy(t *testing.T) {
	t.Parallel()
	tr := &tracing{}
	flush, err := tr.start(context.Background())
	require.NoError(t, err)
	require.NotNil(t, tr.tp)
	p, err := tr.newProxy(gate.ProxyOptions{SessionID: testSID})
	require.NoError(t, err)
	require.NotNil(t, p)
	require.NoError(t, flush(context.Background()))
}
