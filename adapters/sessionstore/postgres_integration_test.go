//go:build integration

package sessionstore

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"sync"
	"testing"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/internal/pgtest"
	"github.com/sandgate/sandgate/ports"
	"github.com/sandgate/sandgate/ports/porttest"
	"github.com/stretchr/testify/require"
)

// postgresDSN and freshDatabase: the server `make integration` names, and
// a database of this test's own on it (internal/pgtest).
var (
	postgresDSN   = pgtest.DSN
	freshDatabase = pgtest.Database
)

func TestPostgresConformance(t *testing.T) {
	dsn := freshDatabase(t)
	s, err := Open(context.Background(), dsn, testKey)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	porttest.RunSessionStore(t, func(t *testing.T) porttest.SessionStoreHarness {
		return harness(t, s, func(t *testing.T) []byte {
			t.Helper()
			// Every column of every row, as the server stores it.
			var all []byte
			for _, table := range []string{"sandgate_gate_tokens", "sandgate_sessions", "sandgate_credentials"} {
				rows, err := s.db.QueryContext(context.Background(), fmt.Sprintf("SELECT t::text FROM %s t", table))
				require.NoError(t, err)
				for rows.Next() {
					var row string
					require.NoError(t, rows.Scan(&row))
					all = append(all, row...)
					all = append(all, '\n')
				}
				require.NoError(t, rows.Err())
				require.NoError(t, rows.Close())
			}
			return all
		})
	})
}

// TestPostgresProbeWrite: the write probe writes on a writable server, and
// fails once the database refuses writes (a read-only server or replica).
func TestPostgresProbeWrite(t *testing.T) {
	ctx := context.Background()
	dsn := freshDatabase(t)
	s, err := Open(ctx, dsn, testKey)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	require.NoError(t, s.ProbeWrite(ctx))
	require.NoError(t, s.ProbeWrite(ctx), "the one row is rewritten")
	_, err = s.db.ExecContext(ctx, `DO $$ BEGIN EXECUTE format(
		'ALTER DATABASE %I SET default_transaction_read_only = on', current_database()); END $$`)
	require.NoError(t, err)
	s.db.SetMaxIdleConns(0) // new connections take the database's setting
	require.NoError(t, s.Ping(ctx))
	require.ErrorContains(t, s.ProbeWrite(ctx), "postgres: write probe: ")
}

// TestPostgresConcurrentOpen: executors starting together on an empty
// database all create (or find) the schema; none fails on a race.
func TestPostgresConcurrentOpen(t *testing.T) {
	dsn := freshDatabase(t)
	const n = 4
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := OpenPostgres(context.Background(), dsn, testKey)
			if err == nil {
				err = s.Close()
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
}

func TestPostgresErrorsHidePassword(t *testing.T) {
	u, err := url.Parse(postgresDSN(t))
	require.NoError(t, err)
	u.User = url.UserPassword("nobody", "hunter2-secret")
	u.Host = "127.0.0.1:1" // nothing listens on port 1
	_, err = OpenPostgres(context.Background(), u.String(), testKey)
	require.ErrorContains(t, err, "postgres: create schema")
	require.NotContains(t, err.Error(), "hunter2-secret")
}

// TestPostgresSessionLocker: the advisory locks exclude two stores (two
// pools, as two executors have) on one database; a lock whose connection is
// killed on the server does not outlive it.
func TestPostgresSessionLocker(t *testing.T) {
	dsn := freshDatabase(t)
	admin, err := sql.Open("pgx", dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = admin.Close() })
	porttest.RunSessionLocker(t, porttest.LockerHarness{
		Open: func(t *testing.T) ports.SessionLocker {
			s, err := OpenPostgres(context.Background(), dsn, testKey)
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, s.Close()) })
			return s
		},
		Break: func(t *testing.T) {
			t.Helper()
			var n int
			require.NoError(t, admin.QueryRowContext(t.Context(), `SELECT count(pg_terminate_backend(pid)) FROM pg_locks
				WHERE locktype = 'advisory' AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&n))
			require.Positive(t, n, "a backend held an advisory lock")
		},
	})
}

// TestPostgresLockKeyOnServer: the lock the store takes is the advisory
// lock of lockKey, visible to anyone on the server, and gone after unlock
// with its connection back in the pool.
func TestPostgresLockKeyOnServer(t *testing.T) {
	dsn := freshDatabase(t)
	s, err := OpenPostgres(context.Background(), dsn, testKey)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	sid := domain.NewID("ses")
	held := func() int {
		var n int
		key := lockKey(sid)
		// A bigint key is stored as classid = high 32 bits, objid = low.
		require.NoError(t, s.db.QueryRowContext(t.Context(), `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'
			AND granted AND objsubid = 1 AND classid::bigint = $1 AND objid::bigint = $2`,
			uint32(uint64(key)>>32), uint32(uint64(key))).Scan(&n))
		return n
	}
	unlock, err := s.Lock(t.Context(), sid)
	require.NoError(t, err)
	require.Equal(t, 1, held())
	unlock()
	require.Equal(t, 0, held())
	require.Equal(t, 1, s.lockDB.Stats().Idle, "the connection went back to the pool after the release")
}
