package sessionstore

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/internal/storetest"
)

func TestPing(t *testing.T) {
	t.Parallel()
	s, err := OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "store.db"), testKey)
	require.NoError(t, err)
	require.NoError(t, s.Ping(context.Background()))
	require.NoError(t, s.Close())
	require.ErrorContains(t, s.Ping(context.Background()), "sqlite: ping: sql: database is closed")
}

// TestProbeWrite: a database that still answers reads but refuses writes
// passes Ping and fails ProbeWrite; it passes again once writable.
func TestProbeWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "store.db")
	s, err := OpenSQLite(ctx, path, testKey)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	require.NoError(t, s.ProbeWrite(ctx))

	restore := storetest.ReadOnly(t, path)
	require.NoError(t, s.Ping(ctx), "reads still work")
	_, err = s.Activity(ctx)
	require.NoError(t, err)
	require.ErrorContains(t, s.ProbeWrite(ctx), "sqlite: write probe: ")
	restore()
	require.NoError(t, s.ProbeWrite(ctx))
}
