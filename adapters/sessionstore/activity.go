package sessionstore

import (
	"context"
	"fmt"
	"time"

	"github.com/sandgate/sandgate/core/domain"
)

// Touch moves the session's last activity forward to at.
func (s *Store) Touch(ctx context.Context, sid domain.ID, at time.Time) error {
	if err := sid.Required(); err != nil {
		return err
	}
	if _, err := s.db.ExecContext(ctx, s.d.q(qTouch), sid.String(), toMillis(at)); err != nil {
		return fmt.Errorf("%s: touch session %s: %w", s.d.name, sid, err)
	}
	return nil
}

// Activity returns the last activity of every stored session.
func (s *Store) Activity(ctx context.Context) (map[domain.ID]time.Time, error) {
	rows, err := s.db.QueryContext(ctx, qActivity)
	if err != nil {
		return nil, fmt.Errorf("%s: list session activity: %w", s.d.name, err)
	}
	defer func() { _ = rows.Close() }()
	out := map[domain.ID]time.Time{}
	for rows.Next() {
		var sid string
		var ms int64
		if err := rows.Scan(&sid, &ms); err != nil {
			return nil, fmt.Errorf("%s: list session activity: %w", s.d.name, err)
		}
		id, err := domain.ParseSessionID(sid)
		if err != nil {
			// A read is an edge: a row this store did not write (Touch and
			// PutSession take a domain.ID) names no session of ours.
			continue
		}
		out[id] = fromMillis(ms)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: list session activity: %w", s.d.name, err)
	}
	return out, nil
}

// toMillis stores a time as Unix milliseconds, 0 for the zero time.
func toMillis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func fromMillis(ms int64) time.Time {
	if ms <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}
