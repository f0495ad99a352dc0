package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The sweep removes exactly our stale temporaries: a recent one (a live
// write's) stays, and so does every other name, however old.
func TestSweepScript(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	old := time.Now().Add(-time.Hour)
	const hex = "0123456789abcdef"
	stale := []string{"a/" + TempPrefix + hex, "a/b/" + TempPrefix + hex + ".manifest", TempPrefix + hex + ".dirs"}
	kept := []string{
		"live/" + TempPrefix + hex,        // recent: a concurrent write
		TempPrefix + "0123456789ABCDEF",   // not our name: upper case
		TempPrefix + hex + "0",            // not our name: 17 digits
		TempPrefix + "notours",            // not our name
		"a/" + TempPrefix + hex + ".keep", // not our name
		"a/plain",
	}
	for _, n := range append(append([]string{}, stale...), kept...) {
		p := filepath.Join(dir, n)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte("x"), 0o644))
		if !strings.HasPrefix(n, "live/") {
			require.NoError(t, os.Chtimes(p, old, old))
		}
	}
	// A stale-looking directory is no temporary.
	require.NoError(t, os.Mkdir(filepath.Join(dir, TempPrefix+"fedcba9876543210"), 0o755))

	argv := SweepArgs(DefaultStaleTempAge, dir)
	require.Equal(t, "10", argv[4], "minutes")
	res := shellRun{}.run(t, argv[2], argv[4:]...)
	require.Equal(t, 0, res.code, res.stderr)
	var removed []string
	for _, l := range strings.Fields(res.stdout) {
		rel, err := filepath.Rel(dir, l)
		require.NoError(t, err)
		removed = append(removed, rel)
	}
	sort.Strings(removed)
	want := append([]string{}, stale...)
	sort.Strings(want)
	require.Equal(t, want, removed)
	for _, n := range stale {
		require.NoFileExists(t, filepath.Join(dir, n))
	}
	for _, n := range kept {
		require.FileExists(t, filepath.Join(dir, n))
	}
	require.DirExists(t, filepath.Join(dir, TempPrefix+"fedcba9876543210"))
}

func TestSweepArgsRoundsUp(t *testing.T) {
	t.Parallel()
	require.Equal(t, "1", SweepArgs(0, "/")[4])
	require.Equal(t, "1", SweepArgs(time.Second, "/")[4])
	require.Equal(t, "2", SweepArgs(61*time.Second, "/")[4])
	require.Equal(t, "/", SweepArgs(time.Minute, "/")[5])
}

func TestSweepCountsAndClassifies(t *testing.T) {
	t.Parallel()
	var got []string
	n, err := Sweep(time.Hour, func(argv []string, out *Capture) (int, string, error) {
		got = argv
		_, _ = out.Write([]byte("/workspace/a\n/tmp/b\n"))
		return 0, "", nil
	})
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Equal(t, SweepArgs(time.Hour, "/"), got)

	_, err = Sweep(time.Hour, func([]string, *Capture) (int, string, error) { return 0, "", errors.New("exec refused") })
	require.EqualError(t, err, "exec refused")
	_, err = Sweep(time.Hour, func([]string, *Capture) (int, string, error) { return 3, "boom", nil })
	require.Error(t, err, "a non-zero exit is a failure")
}
