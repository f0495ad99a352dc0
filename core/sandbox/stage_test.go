package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// stage runs prepare, a simulated transfer of body into TMP, and land, the
// way the Docker adapter sequences them.
func stage(t *testing.T, r shellRun, target, body string, size int64) (prep, land shellResult, tmp string) {
	t.Helper()
	p, l, d, err := StageArgs(target, size)
	require.NoError(t, err)
	tmp = p[5]
	require.Equal(t, tmp, l[5])
	require.Equal(t, tmp, d[4])
	prep = r.run(t, p[2], p[4:]...)
	if prep.code != 0 {
		return prep, shellResult{}, tmp
	}
	require.NoError(t, os.WriteFile(tmp, []byte(body), 0o600))
	land = r.run(t, l[2], l[4:]...)
	return prep, land, tmp
}

func TestStagedWriteLands(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	target := filepath.Join(dir, "new dir", "f")
	prep, land, _ := stage(t, shellRun{umask: "077"}, target, "hello", 5)
	require.Equal(t, 0, prep.code, prep.stderr)
	require.Equal(t, 0, land.code, land.stderr)
	requireFile(t, target, []byte("hello"), 0o644)
	fi, err := os.Stat(filepath.Dir(target))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o755), fi.Mode().Perm())
	requireNoResidue(t, dir)

	// An existing target keeps its mode.
	writeFile(t, target, "old", 0o755)
	_, land, _ = stage(t, shellRun{}, target, "new", 3)
	require.Equal(t, 0, land.code, land.stderr)
	requireFile(t, target, []byte("new"), 0o755)
	requireNoResidue(t, dir)
}

func TestStagedWriteRefuses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "blocker"), "old", 0o640)
	require.NoError(t, os.Mkdir(filepath.Join(dir, "d"), 0o755))

	prep, _, _ := stage(t, shellRun{}, filepath.Join(dir, "blocker", "x", "f"), "", 0)
	requireClassified(t, ClassifyWrite("/t", prep.code, prep.stderr), ExitNotDirectory, "/t", "")
	prep, _, _ = stage(t, shellRun{}, filepath.Join(dir, "d"), "", 0)
	requireClassified(t, ClassifyWrite("/t", prep.code, prep.stderr), ExitIsDirectory, "/t", "")
	prep, _, _ = stage(t, shellRun{nobody: true}, filepath.Join(dir, "d", "f"), "", 0)
	requireClassified(t, ClassifyWrite("/t", prep.code, prep.stderr), ExitNotWritable, "/t", "Permission denied")

	// A body of the wrong length never lands, and TMP goes with it.
	target := filepath.Join(dir, "short")
	writeFile(t, target, "old", 0o640)
	_, land, tmp := stage(t, shellRun{}, target, "abc", 5)
	requireClassified(t, ClassifyWrite("/t", land.code, land.stderr), ExitSizeMismatch, "/t", "")
	isOld(t, target)
	_, err := os.Stat(tmp)
	require.ErrorIs(t, err, os.ErrNotExist)

	// A transfer that removed TMP (or never made it) is a size mismatch too.
	p, l, _, err := StageArgs(filepath.Join(dir, "gone"), 1)
	require.NoError(t, err)
	require.Equal(t, 0, shellRun{}.run(t, p[2], p[4:]...).code)
	require.NoError(t, os.Remove(p[5]))
	land = shellRun{}.run(t, l[2], l[4:]...)
	require.Equal(t, ExitSizeMismatch, land.code)
	requireNoResidue(t, dir)
}

func TestStagedWriteDiscard(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p, _, d, err := StageArgs(filepath.Join(dir, "f"), 3)
	require.NoError(t, err)
	require.Equal(t, 0, shellRun{}.run(t, p[2], p[4:]...).code)
	require.FileExists(t, p[5])
	require.Equal(t, 0, shellRun{}.run(t, d[2], d[4:]...).code)
	requireNoResidue(t, dir)
	_, _, _, err = StageArgs("rel", 1)
	require.ErrorContains(t, err, "not absolute")
	_, _, _, err = StageArgs("/a", -1)
	require.ErrorIs(t, err, ErrSizeNotALength)
}

func TestReadStatArgs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f := filepath.Join(dir, "f")
	writeFile(t, f, strings.Repeat("x", 10), 0o644)
	argv, err := ReadStatArgs(f, 100)
	require.NoError(t, err)
	res := shellRun{}.run(t, argv[2], argv[4:]...)
	require.Equal(t, 0, res.code, res.stderr)
	require.Equal(t, "10\n", res.stdout, "the header alone, no bytes")
	argv, err = ReadStatArgs(f, 5)
	require.NoError(t, err)
	res = shellRun{}.run(t, argv[2], argv[4:]...)
	require.Equal(t, ExitFileTooLarge, res.code)
	_, err = ReadStatArgs("", 1)
	require.Error(t, err)
}
