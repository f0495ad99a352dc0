package executor

import (
	"context"
	"fmt"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/keylock"
	"github.com/sandgate/sandgate/ports"
)

// locks serialises the provisions and deletes of one session: first in
// this process, then — when the store is a ports.SessionLocker — across every
// executor sharing the store (PostgreSQL's advisory lock). The in-process
// lock comes first so that goroutines of one executor queue here rather than
// each holding a database connection while they wait.
type locks struct {
	local keylock.Set[domain.ID]
}

// lock takes sid's locks and returns their release, or the error (ctx's,
// the store's) with neither held.
func (l *locks) lock(ctx context.Context, store ports.SessionStore, sid domain.ID) (func(), error) {
	unlockLocal, err := l.local.Lock(ctx, sid)
	if err != nil {
		return nil, fmt.Errorf("wait for the session lock: %w", err)
	}
	sl, ok := store.(ports.SessionLocker)
	if !ok {
		return unlockLocal, nil
	}
	unlockStore, err := sl.Lock(ctx, sid)
	if err != nil {
		unlockLocal()
		return nil, fmt.Errorf("take the session lock in the store: %w", err)
	}
	return func() {
		unlockStore()
		unlockLocal()
	}, nil
}

// held returns how many sessions have an in-process lock entry (for tests).
func (l *locks) held() int { return l.local.Len() }
