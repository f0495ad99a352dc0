package sessionstore

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"database/sql/driver"
	"encoding/binary"
	"fmt"
	"sync"
	"time"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/keylock"
	"github.com/sandgate/sandgate/ports"
)

var _ ports.SessionLocker = (*Store)(nil)

// unlockTimeout bounds pg_advisory_unlock; past it the connection is
// dropped, which releases the lock as surely.
const unlockTimeout = 5 * time.Second

// lockNamespace is hashed in front of every session id, so that the lock keys
// are sandgate's own corner of the 64-bit advisory key space and do not
// collide with other applications' advisory locks on the same database.
// Changing it lets executors of two versions provision one session at once.
const lockNamespace = "sandgate/session-lock/v1\x00"

// sqliteLocks are the in-process session locks of every SQLite store of this
// process, keyed by the database file, so that two stores on one file (two
// services in one process, a test) exclude each other too.
var sqliteLocks keylock.Set[sqliteLockKey]

type sqliteLockKey struct {
	file string
	sid  domain.ID
}

// Lock serialises work on session sid (ports.SessionLocker). PostgreSQL: a
// session-level advisory lock held on a connection of a separate pool (a
// lock held across a provision must not starve the queries the provision
// makes), returned to that pool only after pg_advisory_unlock said it
// released the lock, and closed otherwise. SQLite: an in-process lock per
// database file; several processes on one SQLite file are not serialised,
// which is why several executors need PostgreSQL.
func (s *Store) Lock(ctx context.Context, sid domain.ID) (func(), error) {
	if err := sid.Required(); err != nil {
		return nil, err
	}
	if s.lockDB == nil {
		unlock, err := sqliteLocks.Lock(ctx, sqliteLockKey{s.file, sid})
		if err != nil {
			return nil, fmt.Errorf("%s: lock session %s: %w", s.d.name, sid, err)
		}
		return unlock, nil
	}
	key := lockKey(sid)
	conn, err := s.lockDB.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: lock session %s: %w", s.d.name, sid, err)
	}
	if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock($1)", key); err != nil {
		// The wait may have been cut by ctx on the client side only, or the
		// lock granted as the answer was lost: closing the connection ends
		// its server session, and with it any lock it holds or waits for.
		discard(conn)
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return nil, fmt.Errorf("%s: lock session %s: %w", s.d.name, sid, err)
	}
	return sync.OnceFunc(func() { advisoryUnlock(conn, key) }), nil
}

// advisoryUnlock releases key on conn and returns conn to its pool, or
// closes conn when the release is not certain.
func advisoryUnlock(conn *sql.Conn, key int64) {
	ctx, cancel := context.WithTimeout(context.Background(), unlockTimeout)
	defer cancel()
	var released bool
	err := conn.QueryRowContext(ctx, "SELECT pg_advisory_unlock($1)", key).Scan(&released)
	if err != nil || !released {
		discard(conn)
		return
	}
	_ = conn.Close()
}

// discard closes conn instead of returning it to the pool: database/sql
// drops a connection whose Raw callback reports driver.ErrBadConn.
func discard(conn *sql.Conn) {
	_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	_ = conn.Close()
}

// lockKey is the advisory lock key of sid: the first 8 bytes of
// SHA-256(lockNamespace + sid). It is stable across processes, versions and
// machines (Go's map hash is not), which every executor sharing the
// database needs.
func lockKey(sid domain.ID) int64 {
	sum := sha256.Sum256([]byte(lockNamespace + sid.String()))
	return int64(binary.BigEndian.Uint64(sum[:8]))
}
