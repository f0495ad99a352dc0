// Package keylock is a set of mutexes keyed by a value (a session id): one
// lock per key, created on first use and dropped when nobody holds or waits
// for it, so the set does not grow with every key ever seen. Waiting is
// cancellable by a context, unlike sync.Mutex, so a caller that has gone away
// stops queueing behind a slow holder.
package keylock

import (
	"context"
	"sync"
)

// Set is a set of keyed locks. The zero value is ready to use; a Set must not
// be copied after first use.
type Set[K comparable] struct {
	mu sync.Mutex
	m  map[K]*entry
}

// entry is one key's lock: a one-slot channel, full while held.
type entry struct {
	held chan struct{}
	refs int // holders and waiters
}

// Lock blocks until the caller holds k's lock or ctx is done. It returns the
// function that releases the lock (idempotent, callable from any goroutine),
// or ctx's error with the lock not held. A ctx already done never takes the
// lock, even when it is free.
func (s *Set[K]) Lock(ctx context.Context, k K) (func(), error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	e := s.ref(k)
	select {
	case e.held <- struct{}{}:
	case <-ctx.Done():
		s.unref(k, e)
		return nil, ctx.Err()
	}
	return sync.OnceFunc(func() {
		<-e.held
		s.unref(k, e)
	}), nil
}

// Len returns how many keys have a lock entry (held or waited for).
func (s *Set[K]) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

// Refs returns how many hold or wait for k's lock.
func (s *Set[K]) Refs(k K) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.m[k]; e != nil {
		return e.refs
	}
	return 0
}

func (s *Set[K]) ref(k K) *entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[K]*entry{}
	}
	e := s.m[k]
	if e == nil {
		e = &entry{held: make(chan struct{}, 1)}
		s.m[k] = e
	}
	e.refs++
	return e
}

func (s *Set[K]) unref(k K, e *entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.refs--; e.refs == 0 {
		delete(s.m, k)
	}
}
