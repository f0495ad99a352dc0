package sessionstore

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/ports"
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
	porttest.RunSessionStore(t, func(t *testing.T) porttest.SessionStoreHarness {
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

// TestSQLiteSessionLocker: the in-process locks exclude two stores opened on
// one file (spelled two ways) and not stores on different files.
func TestSQLiteSessionLocker(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "store.db")
	spellings := []string{path, filepath.Join(dir, ".", "store.db")}
	var n int
	porttest.RunSessionLocker(t, porttest.LockerHarness{
		Open: func(t *testing.T) ports.SessionLocker {
			s, err := OpenSQLite(context.Background(), spellings[n%2], testKey)
			n++
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, s.Close()) })
			return s
		},
	})

	t.Run("files-are-independent", func(t *testing.T) {
		a, _ := openSQLite(t)
		b, _ := openSQLite(t)
		sid := domain.NewID("ses")
		unlockA, err := a.Lock(t.Context(), sid)
		require.NoError(t, err)
		defer unlockA()
		c, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		unlockB, err := b.Lock(c, sid)
		require.NoError(t, err, "another database file has its own locks")
		unlockB()
	})
}

func TestLockKeyIsStable(t *testing.T) {
	t.Parallel()
	// Fixed values: every executor on a database must derive the same key,
	// whatever its version, or two could provision one session at once.
	require.Equal(t, int64(200112423312268028), lockKey(domain.MustParseSessionID("ses_000000000000000000000000")))
	require.Equal(t, int64(3870277353655765744), lockKey(domain.MustParseSessionID("ses_000000000000000000000001")))
}
