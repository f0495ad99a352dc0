package tokenstore

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/sandgate/sandgate/ports/porttest"
	"github.com/stretchr/testify/require"
)

func openSQLite(t *testing.T) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "store.db")
	s, err := OpenSQLite(context.Background(), path, testKey)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s, path
}

func TestSQLiteConformance(t *testing.T) {
	t.Parallel()
	porttest.RunTokenStore(t, func(t *testing.T) porttest.TokenStoreHarness {
		s, path := openSQLite(t)
		return harness(t, s, func(t *testing.T) []byte {
			t.Helper()
			// The database file and its write-ahead log: recent rows live in
			// the log until a checkpoint.
			var all []byte
			for _, p := range []string{path, path + "-wal"} {
				b, err := os.ReadFile(p)
				if !errors.Is(err, fs.ErrNotExist) {
					require.NoError(t, err)
				}
				all = append(all, b...)
			}
			return all
		})
	})
}
