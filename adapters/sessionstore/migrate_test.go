package sessionstore

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/domain"
)

// TestSQLiteUpgradesAnOldDatabase opens a database written before session
// records kept image, workdir and activity: its records survive, gain the
// columns (empty, activity unknown), and a second open changes nothing.
func TestSQLiteUpgradesAnOldDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := sql.Open("sqlite", path)
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
		s, err := OpenSQLite(ctx, path, testKey)
		require.NoError(t, err)
		rec, err := s.GetSession(ctx, domain.MustParseSessionID("ses_old"))
		require.NoError(t, err)
		require.Equal(t, domain.NetUnrestricted, rec.Networking.Type)
		require.Empty(t, rec.Image)
		require.Equal(t, touched, rec.LastActive, "unknown at first, then what the first open touched")
		now := time.UnixMilli(time.Now().UnixMilli()).UTC()
		require.NoError(t, s.Touch(ctx, domain.MustParseSessionID("ses_old"), now))
		all, err := s.Activity(ctx)
		require.NoError(t, err)
		require.Equal(t, map[domain.ID]time.Time{domain.MustParseSessionID("ses_old"): now}, all)
		require.NoError(t, s.Close())
		touched = now
	}
}
