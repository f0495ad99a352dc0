package main

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/internal/storetest"
	"github.com/sandgate/sandgate/ports/portfake"
)

// TestServeReadyzStoreWrites: a store that still answers reads but takes
// no write is not ready (it would fail every provision and delete).
func TestServeReadyzStoreWrites(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t, nil)
	base, _, logs := started(t, cfg, portfake.NewProvider())
	status, _ := get(t, base+"/readyz", "") // the store's files exist once it served
	require.Equal(t, http.StatusOK, status)
	storetest.ReadOnly(t, strings.TrimPrefix(cfg.DatabaseURL, "sqlite://"))
	var body string
	require.Eventually(t, func() bool {
		status, body = get(t, base+"/readyz", "")
		return status == http.StatusServiceUnavailable
	}, 3*writeProbeEvery, 100*time.Millisecond, "unready within the probe's interval")
	require.JSONEq(t, `{"status":"unready","failed":["store"]}`, body)
	require.Contains(t, logs.String(), "write probe")
}

// TestCachedProbe: one probe per interval whatever the rate; a probe cut
// short by its caller is not cached.
func TestCachedProbe(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	calls := 0
	var verdict error
	c := &cachedProbe{every: 5 * time.Second, now: func() time.Time { return now },
		probe: func(ctx context.Context) error { calls++; return errors.Join(ctx.Err(), verdict) }}
	ctx := context.Background()
	require.NoError(t, c.check(ctx))
	verdict = errors.New("read-only")
	now = now.Add(4 * time.Second)
	require.NoError(t, c.check(ctx), "cached")
	require.Equal(t, 1, calls)
	now = now.Add(time.Second)
	require.ErrorContains(t, c.check(ctx), "read-only")
	verdict = nil
	require.ErrorContains(t, c.check(ctx), "read-only", "a failure is cached too")
	require.Equal(t, 2, calls)

	now = now.Add(time.Minute)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	require.ErrorIs(t, c.check(cancelled), context.Canceled)
	require.NoError(t, c.check(ctx), "the cancelled probe was no verdict")
	require.Equal(t, 4, calls)
}
