package tokenstore

import (
	"context"
	"fmt"
)

// Ping reports whether the database answers (the executor's readiness).
func (s *Store) Ping(ctx context.Context) error {
	if err := s.db.PingContext(ctx); err != nil {
		return fmt.Errorf("%s: ping: %w", s.d.name, err)
	}
	return nil
}
