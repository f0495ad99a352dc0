package sessionstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/session"
)

// PutSession replaces the session's record whole, sealing every secret.
func (s *Store) PutSession(ctx context.Context, rec session.Session) error {
	if err := rec.Validate(); err != nil {
		return err
	}
	networking, err := json.Marshal(rec.Networking)
	if err != nil {
		return fmt.Errorf("session %s: networking: %w", rec.ID, err)
	}
	rows := make([][]any, len(rec.Credentials))
	for i, c := range rec.Credentials {
		hosts, locations, err := marshalCredential(c)
		if err != nil {
			return fmt.Errorf("session %s: credentials[%d]: %w", rec.ID, i, err)
		}
		rows[i] = []any{rec.ID.String(), i, c.ID, c.Name, s.sealer.Seal(rec.ID, c.ID, c.Secret), hosts, locations}
	}
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, s.d.q(qPutSession), rec.ID.String(), string(networking),
			rec.Image, rec.Workdir, toMillis(rec.LastActive), string(rec.Isolation)); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.d.q(qDeleteCredentials), rec.ID.String()); err != nil {
			return err
		}
		for _, r := range rows {
			if _, err := tx.ExecContext(ctx, s.d.q(qInsertCredential), r...); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%s: put session %s: %w", s.d.name, rec.ID, err)
	}
	return nil
}

func marshalCredential(c session.Credential) (hosts, locations string, err error) {
	h, err := json.Marshal(c.AllowedHosts)
	if err != nil {
		return "", "", err
	}
	l, err := json.Marshal(c.Locations)
	if err != nil {
		return "", "", err
	}
	return string(h), string(l), nil
}

// GetSession returns the session's record with its secrets opened.
func (s *Store) GetSession(ctx context.Context, sid domain.ID) (session.Session, error) {
	if err := sid.Required(); err != nil {
		return session.Session{}, err
	}
	rec := session.Session{ID: sid}
	var creds []storedCredential
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var networking string
		var lastActive int64
		if err := tx.QueryRowContext(ctx, s.d.q(qGetSession), sid.String()).Scan(
			&networking, &rec.Image, &rec.Workdir, &lastActive, &rec.Isolation); err != nil {
			return err
		}
		rec.LastActive = fromMillis(lastActive)
		if err := json.Unmarshal([]byte(networking), &rec.Networking); err != nil {
			return fmt.Errorf("networking: %w", err)
		}
		var err error
		creds, err = s.readCredentials(ctx, tx, sid)
		return err
	})
	if errors.Is(err, sql.ErrNoRows) {
		return session.Session{}, fmt.Errorf("session %s: %w", sid, session.ErrNotFound)
	}
	if err != nil {
		return session.Session{}, fmt.Errorf("%s: get session %s: %w", s.d.name, sid, err)
	}
	for _, c := range creds {
		cred, err := s.openCredential(sid, c)
		if err != nil {
			return session.Session{}, err
		}
		rec.Credentials = append(rec.Credentials, cred)
	}
	return rec, nil
}

// storedCredential is one credential row as stored.
type storedCredential struct {
	id, name, sealed, hosts, locations string
}

func (s *Store) readCredentials(ctx context.Context, tx *sql.Tx, sid domain.ID) ([]storedCredential, error) {
	rows, err := tx.QueryContext(ctx, s.d.q(qGetCredentials), sid.String())
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }()
	var out []storedCredential
	for rows.Next() {
		var c storedCredential
		if err := rows.Scan(&c.id, &c.name, &c.sealed, &c.hosts, &c.locations); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// openCredential decodes one row and opens its secret.
func (s *Store) openCredential(sid domain.ID, c storedCredential) (session.Credential, error) {
	secret, err := s.sealer.Open(sid, c.id, c.sealed)
	if err != nil {
		return session.Credential{}, err
	}
	cred := session.Credential{ID: c.id, Name: c.name, Secret: secret}
	if err := json.Unmarshal([]byte(c.hosts), &cred.AllowedHosts); err != nil {
		return session.Credential{}, fmt.Errorf("session %s credential %q: allowed_hosts: %w", sid, c.id, err)
	}
	if err := json.Unmarshal([]byte(c.locations), &cred.Locations); err != nil {
		return session.Credential{}, fmt.Errorf("session %s credential %q: locations: %w", sid, c.id, err)
	}
	return cred, nil
}

// DeleteSession removes the session's record, credentials and gate token.
func (s *Store) DeleteSession(ctx context.Context, sid domain.ID) error {
	if err := sid.Required(); err != nil {
		return err
	}
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		for _, q := range []string{qDeleteCredentials, qDeleteSession, qRevokeToken} {
			if _, err := tx.ExecContext(ctx, s.d.q(q), sid.String()); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%s: delete session %s: %w", s.d.name, sid, err)
	}
	return nil
}
