package sessionstore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// schema is valid in both SQLite and PostgreSQL and idempotent. Secrets and
// lists are TEXT (sealed base64, JSON) so one schema serves both.
var schema = []string{
	`CREATE TABLE IF NOT EXISTS sandgate_gate_tokens (
		session_id TEXT PRIMARY KEY,
		token_hash TEXT NOT NULL UNIQUE
	)`,
	`CREATE TABLE IF NOT EXISTS sandgate_sessions (
		session_id TEXT PRIMARY KEY,
		networking TEXT NOT NULL
	)`,
	`CREATE TABLE IF NOT EXISTS sandgate_credentials (
		session_id    TEXT NOT NULL REFERENCES sandgate_sessions (session_id) ON DELETE CASCADE,
		position      INTEGER NOT NULL,
		credential_id TEXT NOT NULL,
		name          TEXT NOT NULL,
		secret_sealed TEXT NOT NULL,
		allowed_hosts TEXT NOT NULL,
		locations     TEXT NOT NULL,
		PRIMARY KEY (session_id, credential_id)
	)`,
	// One row, rewritten by ProbeWrite: readiness proves the store writes.
	`CREATE TABLE IF NOT EXISTS sandgate_write_probe (
		id    INTEGER PRIMARY KEY,
		at_ms BIGINT NOT NULL
	)`,
}

// columns were added to sandgate_sessions after its first release; migrate
// adds each one a database lacks. last_active_ms is Unix milliseconds, 0 for
// unknown.
var columns = []struct{ table, name, def string }{
	{"sandgate_sessions", "image", "TEXT NOT NULL DEFAULT ''"},
	{"sandgate_sessions", "workdir", "TEXT NOT NULL DEFAULT ''"},
	{"sandgate_sessions", "last_active_ms", "BIGINT NOT NULL DEFAULT 0"},
	{"sandgate_sessions", "isolation", "TEXT NOT NULL DEFAULT ''"},
}

// The queries use PostgreSQL's $n placeholders; dialect.q rewrites them for
// SQLite. Persisting is one upsert on the session's row: the previous hash is
// overwritten in the same statement, so there is never a moment with two
// live tokens, and concurrent Persists serialize on the row.
const (
	qPersistToken = `INSERT INTO sandgate_gate_tokens (session_id, token_hash) VALUES ($1, $2)
		ON CONFLICT (session_id) DO UPDATE SET token_hash = excluded.token_hash`
	qRevokeToken  = `DELETE FROM sandgate_gate_tokens WHERE session_id = $1`
	qAuthenticate = `SELECT session_id FROM sandgate_gate_tokens WHERE token_hash = $1`

	qPutSession = `INSERT INTO sandgate_sessions (session_id, networking, image, workdir, last_active_ms, isolation)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (session_id) DO UPDATE SET networking = excluded.networking, image = excluded.image,
		workdir = excluded.workdir, last_active_ms = excluded.last_active_ms, isolation = excluded.isolation`
	qGetSession = `SELECT networking, image, workdir, last_active_ms, isolation FROM sandgate_sessions WHERE session_id = $1`
	// qTouch only moves the clock forward: executors touching one session
	// at once never set it back.
	qTouch             = `UPDATE sandgate_sessions SET last_active_ms = $2 WHERE session_id = $1 AND last_active_ms < $2`
	qActivity          = `SELECT session_id, last_active_ms FROM sandgate_sessions`
	qDeleteSession     = `DELETE FROM sandgate_sessions WHERE session_id = $1`
	qDeleteCredentials = `DELETE FROM sandgate_credentials WHERE session_id = $1`
	qInsertCredential  = `INSERT INTO sandgate_credentials
		(session_id, position, credential_id, name, secret_sealed, allowed_hosts, locations)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`
	qProbeWrite = `INSERT INTO sandgate_write_probe (id, at_ms) VALUES (1, $1)
		ON CONFLICT (id) DO UPDATE SET at_ms = excluded.at_ms`
	qGetCredentials = `SELECT credential_id, name, secret_sealed, allowed_hosts, locations
		FROM sandgate_credentials WHERE session_id = $1 ORDER BY position`
)

// dialect is what differs between the two databases.
type dialect struct {
	// name prefixes errors ("sqlite", "postgres").
	name string
	// driver is the database/sql driver name.
	driver string
	// placeholder replaces the "$" of "$n" placeholders ("?" gives SQLite's
	// "?n"); empty keeps them.
	placeholder string
	// schemaLock, when set, runs first in the schema transaction so that
	// executors starting together do not race on CREATE TABLE.
	schemaLock string
	// hasColumn, when set, counts the columns of table $1 named $2 (SQLite
	// has no ADD COLUMN IF NOT EXISTS); empty means the dialect has it.
	hasColumn string
	// configure sets the pool limits.
	configure func(*sql.DB)
}

// q returns query in the dialect's placeholder syntax. The queries contain
// no other '$'.
func (d dialect) q(query string) string {
	if d.placeholder == "" {
		return query
	}
	return strings.ReplaceAll(query, "$", d.placeholder)
}

// migrate creates the schema if it is missing, in one transaction.
func (s *Store) migrate(ctx context.Context) error {
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if s.d.schemaLock != "" {
			if _, err := tx.ExecContext(ctx, s.d.schemaLock); err != nil {
				return err
			}
		}
		for _, stmt := range schema {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return err
			}
		}
		return s.addColumns(ctx, tx)
	})
	if err != nil {
		return fmt.Errorf("%s: create schema: %w", s.d.name, err)
	}
	return nil
}

// addColumns adds every column of columns the database lacks, idempotently.
func (s *Store) addColumns(ctx context.Context, tx *sql.Tx) error {
	for _, c := range columns {
		if s.d.hasColumn == "" {
			stmt := fmt.Sprintf("ALTER TABLE %s ADD COLUMN IF NOT EXISTS %s %s", c.table, c.name, c.def)
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return err
			}
			continue
		}
		var n int
		if err := tx.QueryRowContext(ctx, s.d.q(s.d.hasColumn), c.table, c.name).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			continue
		}
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("ALTER TABLE %s ADD COLUMN %s %s", c.table, c.name, c.def)); err != nil {
			return err
		}
	}
	return nil
}
