package sandbox

import (
	"path"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWritablePaths(t *testing.T) {
	t.Parallel()
	require.Equal(t, []string{"/workspace", "/tmp", "/mnt"}, WritablePaths(""))
	require.Equal(t, []string{"/srv/app", "/tmp", "/mnt"}, WritablePaths("/srv/app/"))
	require.Equal(t, []string{"/tmp", "/mnt"}, WritablePaths("/tmp"))
	require.Equal(t, []string{"/mnt", "/tmp"}, WritablePaths("/mnt/"))
}

func TestCheckWriteSize(t *testing.T) {
	t.Parallel()
	require.NoError(t, CheckWriteSize(0))
	require.NoError(t, CheckWriteSize(1<<40))
	require.ErrorIs(t, CheckWriteSize(-1), ErrSizeNotALength)
	require.ErrorIs(t, CheckWriteSize(-1<<62), ErrSizeNotALength)
}

var tempRE = regexp.MustCompile(`^\.sandgate-write-[0-9a-f]{16}$`)

func TestTempName(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, target := range []string{"/workspace/a.txt", "/a", "/x y/-z/'q'"} {
		for range 100 {
			tmp := tempName(target)
			require.Equal(t, path.Dir(target), path.Dir(tmp), "the temp lives beside its target")
			require.Regexp(t, tempRE, path.Base(tmp))
			require.True(t, strings.HasPrefix(path.Base(tmp), TempPrefix))
			require.False(t, seen[tmp])
			seen[tmp] = true
		}
	}
	require.Equal(t, "/w/.sandgate-write-00000000000000ff", tempNameN("/w/f", 255))
}
