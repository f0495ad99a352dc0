package tokenstore

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

	qPutSession = `INSERT INTO sandgate_sessions (session_id, networking) VALUES ($1, $2)
		ON CONFLICT (session_id) DO UPDATE SET networking = excluded.networking`
	qGetSession        = `SELECT networking FROM sandgate_sessions WHERE session_id = $1`
	qDeleteSession     = `DELETE FROM sandgate_sessions WHERE session_id = $1`
	qDeleteCredentials = `DELETE FROM sandgate_credentials WHERE session_id = $1`
	qInsertCredential  = `INSERT INTO sandgate_credentials
		(session_id, position, credential_id, name, secret_sealed, allowed_hosts, locations)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`
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
		return nil
	})
	if err != nil {
		return fmt.Errorf("%s: create schema: %w", s.d.name, err)
	}
	return nil
}
