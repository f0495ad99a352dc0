package kubernetes

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
)

// New lifts client-go's default rate limit (5 QPS, burst 10) unless the
// config sets its own, and never writes to the caller's config.
func TestNewDefaultsRateLimits(t *testing.T) {
	t.Parallel()
	cfg := &rest.Config{Host: "https://127.0.0.1:1"}
	p, err := New(cfg, Options{})
	require.NoError(t, err)
	used := p.ex.(*remoteExecer).cfg
	require.InDelta(t, DefaultQPS, used.QPS, 0)
	require.Equal(t, DefaultBurst, used.Burst)
	require.Zero(t, cfg.QPS, "the caller's config is not modified")
	require.Zero(t, cfg.Burst)

	p, err = New(&rest.Config{Host: "https://127.0.0.1:1", QPS: 7, Burst: 9}, Options{})
	require.NoError(t, err)
	used = p.ex.(*remoteExecer).cfg
	require.InDelta(t, 7, used.QPS, 0, "a configured limit is kept")
	require.Equal(t, 9, used.Burst)
}
