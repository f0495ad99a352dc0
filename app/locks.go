package app

import (
	"sync"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/ports"
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

// memo remembers what this executor provisioned — the image and workdir,
// which the store does not keep — for Get and List.
type memo struct {
	mu sync.Mutex
	m  map[domain.ID]ports.SessionInfo
}

func (m *memo) put(info ports.SessionInfo) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil {
		m.m = map[domain.ID]ports.SessionInfo{}
	}
	m.m[info.ID] = info
}

func (m *memo) get(sid domain.ID) (ports.SessionInfo, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	info, ok := m.m[sid]
	return info, ok
}

func (m *memo) drop(sid domain.ID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.m, sid)
}
