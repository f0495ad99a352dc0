package checkpoint

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/ports/porttest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	porttest.RunCheckpointStore(t, func(t *testing.T) porttest.CheckpointHarness {
		dir := filepath.Join(t.TempDir(), "checkpoints")
		s, err := New(dir, 64<<10)
		require.NoError(t, err)
		return porttest.CheckpointHarness{Store: s, MaxBytes: 64 << 10, AtRest: func(t *testing.T) int64 {
			var total int64
			require.NoError(t, filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				info, err := d.Info()
				total += info.Size() + 1 // a file of 0 bytes counts too
				return err
			}))
			return total
		}}
	})
}

func TestModesAndPrepare(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "a", "checkpoints")
	s, err := New(dir, 1024)
	require.NoError(t, err)
	require.NoDirExists(t, dir, "New touches nothing")
	require.NoError(t, s.Prepare())
	st, err := os.Stat(dir)
	require.NoError(t, err)
	require.Equal(t, fs.FileMode(0o700), st.Mode().Perm())

	sid := domain.NewID("ses")
	_, err = s.Put(context.Background(), sid, bytes.NewReader([]byte("tar")))
	require.NoError(t, err)
	st, err = os.Stat(filepath.Join(dir, sid.String()+".tar"))
	require.NoError(t, err)
	require.Equal(t, fs.FileMode(0o600), st.Mode().Perm())

	stale := filepath.Join(dir, tempPrefix+"ses_x-123")
	require.NoError(t, os.WriteFile(stale, []byte("half"), 0o600))
	require.NoError(t, s.Prepare())
	require.NoFileExists(t, stale, "Prepare removes what an interrupted Put left")
	require.FileExists(t, filepath.Join(dir, sid.String()+".tar"))
}

func TestNewRefusesBadSettings(t *testing.T) {
	t.Parallel()
	_, err := New("", 1)
	require.ErrorContains(t, err, "checkpoint dir")
	_, err = New(t.TempDir(), 0)
	require.ErrorContains(t, err, "max bytes")
}
