package keylock

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestLockExcludesPerKey(t *testing.T) {
	t.Parallel()
	var s Set[string]
	var inside, most atomic.Int32
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			unlock, err := s.Lock(context.Background(), "a")
			if !assertNoError(t, err) {
				return
			}
			n := inside.Add(1)
			for {
				m := most.Load()
				if n <= m || most.CompareAndSwap(m, n) {
					break
				}
			}
			time.Sleep(time.Millisecond)
			inside.Add(-1)
			unlock()
		}()
	}
	wg.Wait()
	require.Equal(t, int32(1), most.Load(), "one holder of a key at a time")
	require.Zero(t, s.Len(), "entries are dropped when nobody holds or waits")
}

func assertNoError(t *testing.T, err error) bool {
	t.Helper()
	if err != nil {
		t.Error(err)
		return false
	}
	return true
}

func TestLockKeysAreIndependent(t *testing.T) {
	t.Parallel()
	var s Set[string]
	unlockA, err := s.Lock(context.Background(), "a")
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	unlockB, err := s.Lock(ctx, "b")
	require.NoError(t, err, "b is free while a is held")
	require.Equal(t, 2, s.Len())
	unlockA()
	unlockB()
	require.Zero(t, s.Len())
}

func TestLockCancelWhileWaiting(t *testing.T) {
	t.Parallel()
	var s Set[string]
	unlock, err := s.Lock(context.Background(), "a")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		u, err := s.Lock(ctx, "a")
		if u != nil {
			u()
		}
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("the waiter returned while a was held: %v", err)
	default:
	}
	require.Eventually(t, func() bool { return s.Refs("a") == 2 }, time.Second, time.Millisecond, "holder and waiter")
	require.Zero(t, s.Refs("b"))
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	require.Equal(t, 1, s.Len(), "the cancelled waiter dropped its reference")
	require.Equal(t, 1, s.Refs("a"))
	unlock()
	require.Zero(t, s.Len())

	// The key is free again, and a release is idempotent.
	again, err := s.Lock(context.Background(), "a")
	require.NoError(t, err)
	again()
	again()
	require.Zero(t, s.Len())
}

func TestLockDoneContextNeverTakes(t *testing.T) {
	t.Parallel()
	var s Set[int]
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for range 100 {
		u, err := s.Lock(ctx, 1)
		require.ErrorIs(t, err, context.Canceled)
		require.Nil(t, u)
	}
	require.Zero(t, s.Len())
}
