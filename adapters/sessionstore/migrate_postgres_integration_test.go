//go:build integration

package sessionstore

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/domain"
)

// TestPostgresUpgradesAnOldDatabase is TestSQLiteUpgradesAnOldDatabase on
// PostgreSQL (ADD COLUMN IF NOT EXISTS).
func TestPostgresUpgradesAnOldDatabase(t *testing.T) {
	ctx := context.Background()
	dsn := freshDatabase(t)
	db, err := sql.Open("pgx", dsn)
	require.NoError(t, err)
	for _, stmt := range []string{
		`CREATE TABLE sandgate_sessions (session_id TEXT PRIMARY KEY, networking TEXT NOT NULL)`,
		`INSERT INTO sandgate_sessions VALUES ('ses_old', '{"type":"unrestricted"}')`,
	} {
		_, err := db.ExecContext(ctx, stmt)
		require.NoError(t, err)
	}
	require.NoError(t, db.Close())

	var touched time.Time
	for range 2 {
		s, err := OpenPostgres(ctx, dsn, testKey)
		require.NoError(t, err)
		rec, err := s.GetSession(ctx, domain.MustParseSessionID("ses_old"))
		require.NoError(t, err)
		require.Equal(t, domain.NetUnrestricted, rec.Networking.Type)
		require.Empty(t, rec.Workdir)
		require.Equal(t, touched, rec.LastActive, "unknown at first, then what the first open touched")
		now := time.UnixMilli(time.Now().UnixMilli()).UTC()
		require.NoError(t, s.Touch(ctx, domain.MustParseSessionID("ses_old"), now))
		require.NoError(t, s.Close())
		touched = now
	}
}
