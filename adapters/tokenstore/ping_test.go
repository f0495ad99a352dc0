package tokenstore

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPing(t *testing.T) {
	t.Parallel()
	s, err := OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "store.db"), testKey)
	require.NoError(t, err)
	require.NoError(t, s.Ping(context.Background()))
	require.NoError(t, s.Close())
	require.ErrorContains(t, s.Ping(context.Background()), "sqlite: ping: sql: database is closed")
}
