package agent

import (
	"sync"
	"time"
)

// expiry is a command's deadline: when it passes and the command's group
// still has a live member, it asks for the deadline mark and SIGKILLs the
// group — at once, from its own timer, so a caller slow to read the output
// never delays the kill. A nil *expiry is a command without a deadline.
type expiry struct {
	pgid     int
	timer    *time.Timer
	mark     chan struct{}
	mu       sync.Mutex
	stopOnce sync.Once
	done     chan struct{} // closed once the timer's function has run
	killed   bool
}

func newExpiry(pgid int, after time.Duration) *expiry {
	e := &expiry{pgid: pgid, mark: make(chan struct{}, 1), done: make(chan struct{})}
	e.timer = time.AfterFunc(after, e.fire)
	return e
}

func (e *expiry) fire() {
	defer close(e.done)
	if !groupAlive(e.pgid) {
		return
	}
	e.mu.Lock()
	e.killed = true
	e.mu.Unlock()
	e.mark <- struct{}{}
	killGroup(e.pgid)
}

// markC delivers one value when the deadline mark is due.
func (e *expiry) markC() <-chan struct{} {
	if e == nil {
		return nil
	}
	return e.mark
}

// stop disarms the deadline, waiting for a kill already under way, and
// reports whether the deadline killed the group. It may be called again.
func (e *expiry) stop() bool {
	if e == nil {
		return false
	}
	e.stopOnce.Do(func() {
		if !e.timer.Stop() {
			<-e.done
		}
	})
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.killed
}
