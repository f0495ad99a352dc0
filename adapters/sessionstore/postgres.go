package sessionstore

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	// pgx's database/sql driver, registered as "pgx".
	_ "github.com/jackc/pgx/v5/stdlib"
)

// OpenPostgres opens the PostgreSQL store at dsn (a libpq URL or key=value
// string, handed to pgx) with the 32-byte secrets key, creating the schema
// under an advisory lock so executors starting together do not collide.
// Errors never contain the dsn, which may hold a password.
func OpenPostgres(ctx context.Context, dsn string, key []byte) (*Store, error) {
	s, err := open(ctx, postgresDialect, dsn, key)
	if err != nil {
		return nil, err
	}
	// sql.Open only parses the dsn, which the store's own pool just used.
	s.lockDB, err = sql.Open(postgresDialect.driver, dsn)
	if err != nil {
		_ = s.db.Close()
		return nil, fmt.Errorf("postgres: open the lock pool: %w", err)
	}
	s.lockDB.SetMaxOpenConns(maxLockConns)
	s.lockDB.SetMaxIdleConns(2)
	s.lockDB.SetConnMaxIdleTime(time.Minute)
	return s, nil
}

// maxLockConns bounds the advisory-lock pool: at most this many sessions
// are provisioned or deleted at once by one executor; more wait for a
// connection (cancellably). With the store's own 10, one executor opens at
// most 42 connections, so two fit PostgreSQL's default max_connections (100).
const maxLockConns = 32

var postgresDialect = dialect{
	name:   "postgres",
	driver: "pgx",
	// The lock id is "sandgate" in ASCII, read as a big-endian int64.
	schemaLock: "SELECT pg_advisory_xact_lock(8314047764612871269)",
	configure: func(db *sql.DB) {
		db.SetMaxOpenConns(10)
		db.SetMaxIdleConns(5)
		db.SetConnMaxIdleTime(5 * time.Minute)
	},
}
