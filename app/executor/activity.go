package executor

import (
	"sync"
	"time"

	"github.com/sandgate/sandgate/core/domain"
)

// activity is this process's view of each session's use: the calls in
// flight, the last call, and when the store last heard of it. The hot path
// (begin, end) is a mutex and a map; a write to the store is due at most
// once per session per debounce (the caller makes it), and the reaper's
// heartbeat (due) keeps a long call's session fresh in the store so that
// another executor's reaper sees it too.
type activity struct {
	mu       sync.Mutex
	debounce time.Duration
	m        map[domain.ID]*use
}

type use struct {
	inFlight int
	last     time.Time // the last begin or end
	written  time.Time // the last activity handed to the store
	reaping  bool      // a reap holds the session: new calls are refused
}

func (a *activity) get(sid domain.ID) *use {
	if a.m == nil {
		a.m = map[domain.ID]*use{}
	}
	u := a.m[sid]
	if u == nil {
		u = &use{}
		a.m[sid] = u
	}
	return u
}

// begin counts a call on sid starting at now. ok is false while a reap
// holds the session; touch reports that a store write of now is due.
func (a *activity) begin(sid domain.ID, now time.Time) (touch, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	u := a.get(sid)
	if u.reaping {
		return false, false
	}
	u.inFlight++
	u.last = now
	return u.due(now, a.debounce), true
}

// end counts the end of a call begin admitted.
func (a *activity) end(sid domain.ID, now time.Time) (touch bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	u := a.get(sid)
	u.inFlight--
	u.last = now
	return u.due(now, a.debounce)
}

// due marks now as written when the last write is a debounce old.
func (u *use) due(now time.Time, debounce time.Duration) bool {
	if now.Sub(u.written) < debounce {
		return false
	}
	u.written = now
	return true
}

// stored records that the store holds activity at (a provision's record).
func (a *activity) stored(sid domain.ID, at time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	u := a.get(sid)
	u.last, u.written = at, at
}

// snapshot returns sid's calls in flight and last call (zero if none).
func (a *activity) snapshot(sid domain.ID) (int, time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if u := a.m[sid]; u != nil {
		return u.inFlight, u.last
	}
	return 0, time.Time{}
}

// claim marks sid as being reaped if nothing is in flight (or force), so no
// call starts while the reap runs; release ends the claim and forgets sid.
func (a *activity) claim(sid domain.ID, force bool) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	u := a.get(sid)
	if u.reaping || (u.inFlight > 0 && !force) {
		return false
	}
	u.reaping = true
	return true
}

func (a *activity) release(sid domain.ID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if u := a.m[sid]; u != nil && u.inFlight == 0 {
		delete(a.m, sid)
	} else if u != nil {
		u.reaping = false
	}
}

// heartbeat returns the activity to write for every session with a call in
// flight (now) or a call the store has not heard of (its last), marking it
// written, and forgets idle sessions keep rejects (not on the endpoint).
func (a *activity) heartbeat(now time.Time, keep func(domain.ID) bool) map[domain.ID]time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := map[domain.ID]time.Time{}
	for sid, u := range a.m {
		switch {
		case u.inFlight > 0:
			out[sid], u.written = now, now
		case u.last.After(u.written):
			out[sid], u.written = u.last, u.last
		case !u.reaping && !keep(sid):
			delete(a.m, sid)
		}
	}
	return out
}
