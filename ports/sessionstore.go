package ports

import (
	"context"
	"time"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/session"
)

// GateTokens mints, revokes and checks gate tokens (C-GATE-2, C-GATE-4).
// Generate returns gatewire.NewToken's shape: "sgt_" and 64 lower-case hex
// characters. Persist stores only the token's SHA-256 hex and replaces the
// session's previous token, which stops authenticating at once (one live
// token per session; concurrent Persists for one session leave exactly one).
// Persist errors: domain.ErrInvalidID for the zero session id, gatewire.
// ErrInvalidToken for a malformed token (both before any query), the
// store's. Revoke errors: domain.ErrInvalidID, the store's.
type GateTokens interface {
	GateTokenIssuer
	// Authenticate returns the session whose live token this is.
	// Errors: gatewire.ErrUnauthorized for a malformed, unknown or revoked
	// token (a malformed one is refused before any query); the store's.
	// No error text contains the token.
	Authenticate(ctx context.Context, token string) (domain.ID, error)
}

// Sessions stores each session's record: networking policy, credentials
// (the secrets sealed at rest, AES-256-GCM, bound to their row), image,
// workdir and last activity.
type Sessions interface {
	// PutSession validates s (Session.Validate) and replaces the session's
	// record whole. Errors: session.ErrInvalid or domain.ErrInvalidID naming
	// the field (before any query); the store's. No error contains a secret.
	PutSession(ctx context.Context, s session.Session) error
	// GetSession returns the record with its secrets opened and credentials
	// in the order they were put. Errors: domain.ErrInvalidID (before any
	// query); session.ErrNotFound; session.ErrDecrypt (wrong key, a tampered
	// or moved ciphertext); the store's.
	GetSession(ctx context.Context, id domain.ID) (session.Session, error)
	// DeleteSession removes the record, its credentials and its gate token;
	// deleting a session that has none is a no-op. Errors:
	// domain.ErrInvalidID (before any query); the store's.
	DeleteSession(ctx context.Context, id domain.ID) error
}

// SessionActivity keeps each session's last activity in its record: the
// reaper's idle clock, shared by every executor using the store.
type SessionActivity interface {
	// Touch moves the session's last activity forward to at, never back;
	// touching a session without a record is a no-op. Errors:
	// domain.ErrInvalidID (before any query); the store's.
	Touch(ctx context.Context, sid domain.ID, at time.Time) error
	// Activity returns the last activity of every session with a record
	// (the zero time when unknown); an id missing from it has no record.
	// Errors: the store's.
	Activity(ctx context.Context) (map[domain.ID]time.Time, error)
}

// SessionStore is the control plane's store of gate tokens and session
// records. The halves are separate interfaces so a consumer (the gate
// config handler: Authenticate then GetSession) can ask for less.
type SessionStore interface {
	GateTokens
	Sessions
	SessionActivity
	// Close releases the store's connections.
	Close() error
}

// SessionLocker serialises the provisions and deletes of one session across
// every executor that shares the store. It is optional: a SessionStore that
// implements it is found by type assertion (io/fs style). The PostgreSQL
// store holds an advisory lock, so executors on one database exclude each
// other; the SQLite store locks in process only (one executor per file).
type SessionLocker interface {
	// Lock blocks until the caller holds sid's lock or ctx is done, and
	// returns the function that releases it (idempotent; it never blocks
	// longer than the store's bound and, should the release fail, drops the
	// store's connection so that the lock cannot outlive it). Errors:
	// domain.ErrInvalidID (before waiting); ctx's error when it is done
	// first; the store's. With an error the lock is not held.
	Lock(ctx context.Context, sid domain.ID) (unlock func(), err error)
}
