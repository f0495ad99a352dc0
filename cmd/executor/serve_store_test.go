package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/ports"
)

// TestLazyStoreLocks: the service finds the store's session locker through
// the wrapper the graph hands out; before the store is open it refuses.
func TestLazyStoreLocks(t *testing.T) {
	t.Parallel()
	var s lazyStore
	var _ ports.SessionLocker = &s
	sid := domain.NewID("ses")
	_, err := s.Lock(t.Context(), sid)
	require.ErrorIs(t, err, errStoreClosed)

	require.NoError(t, s.open(context.Background(), testConfig(t, nil)))
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	unlock, err := s.Lock(t.Context(), sid)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	_, err = s.Lock(ctx, sid)
	require.ErrorIs(t, err, context.DeadlineExceeded, "the store's lock is held")
	unlock()
}
