// Package sessionstore implements ports.SessionStore on SQL: SQLite through
// modernc.org/sqlite (pure Go, the embedded default) and PostgreSQL through
// github.com/jackc/pgx/v5 (for several executors sharing one store). Both run
// the same queries through database/sql; a dialect holds the few
// differences (placeholders, schema locking, connection limits).
//
// Gate tokens are kept only as their SHA-256 hex, one row per session, so
// persisting a token replaces (revokes) the previous one atomically.
// Credential secrets are sealed with session.Sealer, bound to their session
// and credential id.
package sessionstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/gatewire"
	"github.com/sandgate/sandgate/core/session"
	"github.com/sandgate/sandgate/ports"
)

// Store is a ports.SessionStore on one SQL database.
type Store struct {
	db     *sql.DB
	d      dialect
	sealer *session.Sealer
	// lockDB is PostgreSQL's pool of advisory-lock connections (Lock); nil
	// for SQLite, whose locks are in process, keyed by file.
	lockDB *sql.DB
	file   string
}

var _ ports.SessionStore = (*Store)(nil)

// Open opens the store named by a database URL (SANDGATE_DATABASE_URL):
// "sqlite://PATH" (sqlite:///var/lib/sandgate/store.db is the absolute path
// /var/lib/sandgate/store.db) or "postgres://…" / "postgresql://…" (a libpq
// URL handed to pgx). key is the 32-byte secrets key. Errors never contain
// the URL, which may hold a password.
func Open(ctx context.Context, databaseURL string, key []byte) (*Store, error) {
	switch {
	case strings.HasPrefix(databaseURL, "sqlite://"):
		return OpenSQLite(ctx, strings.TrimPrefix(databaseURL, "sqlite://"), key)
	case strings.HasPrefix(databaseURL, "postgres://"), strings.HasPrefix(databaseURL, "postgresql://"):
		return OpenPostgres(ctx, databaseURL, key)
	}
	return nil, errors.New("database url: must start with sqlite:// or postgres://")
}

// open connects with d, checks the key, and creates the schema.
func open(ctx context.Context, d dialect, dsn string, key []byte) (*Store, error) {
	sealer, err := session.NewSealer(key)
	if err != nil {
		return nil, err
	}
	db, err := sql.Open(d.driver, dsn)
	if err != nil {
		return nil, fmt.Errorf("%s: open: %w", d.name, err)
	}
	d.configure(db)
	s := &Store{db: db, d: d, sealer: sealer}
	if err := s.migrate(ctx); err != nil {
		_ = db.Close()
		return nil, err
	}
	return s, nil
}

// Close closes the database (and the lock pool, releasing every lock still
// held).
func (s *Store) Close() error {
	if s.lockDB != nil {
		_ = s.lockDB.Close()
	}
	return s.db.Close()
}

// Generate returns a fresh gate token; nothing is stored.
func (s *Store) Generate() string { return gatewire.NewToken() }

// Persist makes token the session's one live gate token, by hash.
func (s *Store) Persist(ctx context.Context, sid domain.ID, token string) error {
	if err := sid.Required(); err != nil {
		return err
	}
	if err := gatewire.ValidateToken(token); err != nil {
		return err
	}
	_, err := s.db.ExecContext(ctx, s.d.q(qPersistToken), sid.String(), gatewire.TokenHash(token))
	if err != nil {
		return fmt.Errorf("%s: persist gate token of session %s: %w", s.d.name, sid, err)
	}
	return nil
}

// Revoke deletes the session's gate token, if any.
func (s *Store) Revoke(ctx context.Context, sid domain.ID) error {
	if err := sid.Required(); err != nil {
		return err
	}
	if _, err := s.db.ExecContext(ctx, s.d.q(qRevokeToken), sid.String()); err != nil {
		return fmt.Errorf("%s: revoke gate token of session %s: %w", s.d.name, sid, err)
	}
	return nil
}

// Authenticate returns the session whose live token this is.
func (s *Store) Authenticate(ctx context.Context, token string) (domain.ID, error) {
	if gatewire.ValidateToken(token) != nil {
		return domain.ID{}, fmt.Errorf("gate token: %w", gatewire.ErrUnauthorized)
	}
	var sid string
	err := s.db.QueryRowContext(ctx, s.d.q(qAuthenticate), gatewire.TokenHash(token)).Scan(&sid)
	if errors.Is(err, sql.ErrNoRows) {
		return domain.ID{}, fmt.Errorf("gate token: %w", gatewire.ErrUnauthorized)
	}
	if err != nil {
		return domain.ID{}, fmt.Errorf("%s: authenticate gate token: %w", s.d.name, err)
	}
	id, err := domain.ParseSessionID(sid)
	if err != nil {
		return domain.ID{}, fmt.Errorf("%s: authenticate gate token: stored %w", s.d.name, err)
	}
	return id, nil
}

// inTx runs fn in a transaction, committing only when it succeeds.
func (s *Store) inTx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}
