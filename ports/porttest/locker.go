package porttest

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/ports"
)

// LockerHarness is what a ports.SessionLocker implementation hands
// RunSessionLocker.
type LockerHarness struct {
	// Open returns another instance of the store on the same database each
	// call: two instances stand for two executors (two connection pools).
	// The harness closes them.
	Open func(t *testing.T) ports.SessionLocker
	// Break, when set, breaks every database connection that holds a
	// session lock, as a restarted server or a cut network would; the
	// broken-connection row runs only then (an in-process lock has no
	// connection to break).
	Break func(t *testing.T)
}

// lockWait is how long a row waits for a lock that must be free, and how
// long it watches a lock that must stay held.
const (
	lockWait  = 10 * time.Second
	lockWatch = 300 * time.Millisecond
)

// RunSessionLocker runs the conformance suite of ports.SessionLocker. Rows
// run one after the other: the broken-connection row breaks every lock
// holder of the database.
func RunSessionLocker(t *testing.T, h LockerHarness) {
	t.Helper()
	rows := []struct {
		name string
		run  func(t *testing.T, h LockerHarness)
	}{
		{"excludes-across-instances", lkExcludes},
		{"sessions-are-independent", lkIndependent},
		{"cancel-while-waiting", lkCancel},
		{"unlock-is-idempotent", lkUnlockTwice},
		{"bad-id-refused", lkBadID},
	}
	if h.Break != nil {
		rows = append(rows, struct {
			name string
			run  func(t *testing.T, h LockerHarness)
		}{"broken-connection-does-not-leak", lkBroken})
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) { r.run(t, h) })
	}
}

// lkLock takes sid's lock on l, failing the row if it is not free within
// lockWait.
func lkLock(t *testing.T, l ports.SessionLocker, sid domain.ID) func() {
	t.Helper()
	c, cancel := context.WithTimeout(t.Context(), lockWait)
	defer cancel()
	unlock, err := l.Lock(c, sid)
	require.NoError(t, err)
	require.NotNil(t, unlock)
	return unlock
}

// lkHeld asserts that sid's lock cannot be taken on l for lockWatch.
func lkHeld(t *testing.T, l ports.SessionLocker, sid domain.ID) {
	t.Helper()
	c, cancel := context.WithTimeout(t.Context(), lockWatch)
	defer cancel()
	unlock, err := l.Lock(c, sid)
	if err == nil {
		unlock()
	}
	require.ErrorIs(t, err, context.DeadlineExceeded, "the lock is held elsewhere")
}

// lkExcludes: goroutines locking one session through two instances never
// overlap, and each gets its turn.
func lkExcludes(t *testing.T, h LockerHarness) {
	a, b := h.Open(t), h.Open(t)
	sid := domain.NewID("ses")
	unlock := lkLock(t, a, sid)
	lkHeld(t, b, sid)
	unlock()
	unlock = lkLock(t, b, sid)
	lkHeld(t, a, sid)
	unlock()

	const workers, rounds = 6, 5
	var inside, overlaps, turns atomic.Int32
	var wg sync.WaitGroup
	for i := range workers {
		l := []ports.SessionLocker{a, b}[i%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				c, cancel := context.WithTimeout(t.Context(), time.Minute)
				unlock, err := l.Lock(c, sid)
				cancel()
				if err != nil {
					t.Error(err)
					return
				}
				if inside.Add(1) != 1 {
					overlaps.Add(1)
				}
				turns.Add(1)
				time.Sleep(2 * time.Millisecond)
				inside.Add(-1)
				unlock()
			}
		}()
	}
	wg.Wait()
	require.Zero(t, overlaps.Load(), "two holders of one session's lock at once")
	require.Equal(t, int32(workers*rounds), turns.Load())
}

// lkIndependent: a held lock blocks its session only.
func lkIndependent(t *testing.T, h LockerHarness) {
	a, b := h.Open(t), h.Open(t)
	one, two := domain.NewID("ses"), domain.NewID("ses")
	unlockOne := lkLock(t, a, one)
	unlockTwo := lkLock(t, b, two)
	lkHeld(t, b, one)
	lkHeld(t, a, two)
	unlockOne()
	unlockTwo()
}

// lkCancel: a waiter whose context ends returns its error promptly without
// the lock; a context already done never takes a free lock; the holder's
// release then frees the session for the other instance.
func lkCancel(t *testing.T, h LockerHarness) {
	a, b := h.Open(t), h.Open(t)
	sid := domain.NewID("ses")
	unlock := lkLock(t, a, sid)
	c, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		u, err := b.Lock(c, sid)
		if u != nil {
			u()
		}
		done <- err
	}()
	time.Sleep(lockWatch)
	select {
	case err := <-done:
		t.Fatalf("Lock returned while the session was locked elsewhere: %v", err)
	default:
	}
	cancelled := time.Now()
	cancel()
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.Canceled)
		require.Less(t, time.Since(cancelled), 5*time.Second, "cancellation is prompt")
	case <-time.After(lockWait):
		t.Fatal("Lock did not return after its context was cancelled")
	}
	unlock()

	gone, cancelGone := context.WithCancel(t.Context())
	cancelGone()
	u, err := b.Lock(gone, sid)
	require.ErrorIs(t, err, context.Canceled)
	require.Nil(t, u)
	lkLock(t, b, sid)()
	lkLock(t, a, sid)()
}

// lkUnlockTwice: a second release is a no-op; it does not release a lock
// someone else took since.
func lkUnlockTwice(t *testing.T, h LockerHarness) {
	a, b := h.Open(t), h.Open(t)
	sid := domain.NewID("ses")
	unlock := lkLock(t, a, sid)
	unlock()
	unlockB := lkLock(t, b, sid)
	unlock()
	lkHeld(t, a, sid)
	unlockB()
	lkLock(t, a, sid)()
}

func lkBadID(t *testing.T, h LockerHarness) {
	a := h.Open(t)
	unrepresentable(t, "has space", "ses_x/../y")
	u, err := a.Lock(t.Context(), domain.ID{})
	require.ErrorIs(t, err, domain.ErrInvalidID, "the zero id")
	require.Nil(t, u)
}

// lkBroken: the connection holding a lock breaks; the release returns
// promptly, the other instance gets the lock, and the first instance's next
// lock works (the broken connection was not handed out again).
func lkBroken(t *testing.T, h LockerHarness) {
	a, b := h.Open(t), h.Open(t)
	sid := domain.NewID("ses")
	unlock := lkLock(t, a, sid)
	lkHeld(t, b, sid)
	h.Break(t)
	released := time.Now()
	unlock()
	require.Less(t, time.Since(released), 10*time.Second, "the release is bounded")
	lkLock(t, b, sid)()
	for range 3 {
		lkLock(t, a, sid)()
	}
}
