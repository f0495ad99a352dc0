package app

import (
	"sync"

	"github.com/sandgate/sandgate/core/domain"
)

// locks serialises the provisions and deletes of one session in this
// process: one mutex per session, held in a map only while someone holds or
// waits for it, so the map does not grow with every session ever seen.
// (Several executors sharing a PostgreSQL store need an advisory lock on
// top; the provider already converges concurrent creates.)
type locks struct {
	mu sync.Mutex
	m  map[domain.ID]*sessionLock
}

type sessionLock struct {
	mu   sync.Mutex
	refs int
}

// lock locks sid and returns its unlock.
func (l *locks) lock(sid domain.ID) func() {
	l.mu.Lock()
	if l.m == nil {
		l.m = map[domain.ID]*sessionLock{}
	}
	sl := l.m[sid]
	if sl == nil {
		sl = &sessionLock{}
		l.m[sid] = sl
	}
	sl.refs++
	l.mu.Unlock()
	sl.mu.Lock()
	return func() {
		sl.mu.Unlock()
		l.mu.Lock()
		if sl.refs--; sl.refs == 0 {
			delete(l.m, sid)
		}
		l.mu.Unlock()
	}
}

// held returns how many sessions have a lock entry (for tests).
func (l *locks) held() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.m)
}
