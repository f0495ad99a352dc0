package sessionstore

import (
	"context"
	"fmt"
	"time"
)

// Ping reports whether the database answers (the executor's readiness).
func (s *Store) Ping(ctx context.Context) error {
	if err := s.db.PingContext(ctx); err != nil {
		return fmt.Errorf("%s: ping: %w", s.d.name, err)
	}
	return nil
}

// ProbeWrite reports whether the database takes a write: it rewrites the
// one row of sandgate_write_probe. A database that answers reads but
// refuses writes (a read-only file or mount, a read-only transaction mode,
// a full disk) passes Ping and fails this; every provision and delete
// would fail with it. Callers bound how often they probe (/readyz caches
// it), since each probe is a committed write.
func (s *Store) ProbeWrite(ctx context.Context) error {
	if _, err := s.db.ExecContext(ctx, s.d.q(qProbeWrite), time.Now().UnixMilli()); err != nil {
		return fmt.Errorf("%s: write probe: %w", s.d.name, err)
	}
	return nil
}
