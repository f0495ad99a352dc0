package agent

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/sandbox"
)

// A regular file that is a mount point is rare on a test machine (a
// container's /etc/hosts is one, which porttest's C-WRITE-6 rows cover on
// both backends); /proc is one everywhere, and the check does not care
// about the kind of file.
func TestMountPoint(t *testing.T) {
	t.Parallel()
	require.True(t, isMountPoint("/proc"))
	require.False(t, isMountPoint(t.TempDir()+"/x"))
	require.ErrorIs(t, checkReplaceable("/proc"), sandbox.ErrNotReplaceable)
	d := t.TempDir()
	require.NoError(t, os.Symlink("/proc", d+"/link"))
	require.NoError(t, checkReplaceable(d+"/link"), "a symlink's name is replaced, not what it names")
	require.Equal(t, "a b\tc\nd\\e", unescapeMount(`a\040b\011c\012d\134e`))
}

func TestReadStat(t *testing.T) {
	t.Parallel()
	p := t.TempDir() + "/stat"
	require.NoError(t, os.WriteFile(p, []byte("42 (odd) name) S 1 42 42 0 -1"), 0o600))
	state, pgrp, ok := readStat(p)
	require.True(t, ok)
	require.Equal(t, byte('S'), state)
	require.Equal(t, 42, pgrp)
	for _, bad := range []string{"42 no paren", "42 (x) S 1", "42 (x) S 1 notanumber"} {
		require.NoError(t, os.WriteFile(p, []byte(bad), 0o600))
		_, _, ok = readStat(p)
		require.False(t, ok, bad)
	}
	_, _, ok = readStat(p + ".missing")
	require.False(t, ok)
	require.False(t, groupAlive(1<<22), "no such group")
	require.True(t, groupAlive(os.Getpid()) || groupAlive(getpgrp()), "the test's own group lives")
}

func getpgrp() int {
	_, pgrp, _ := readStat("/proc/self/stat")
	return pgrp
}

func TestStrerror(t *testing.T) {
	t.Parallel()
	_, err := os.Open("/no/such")
	require.Equal(t, "No such file or directory", strerror(err))
}

func TestExpiryStopIsIdempotent(t *testing.T) {
	t.Parallel()
	e := newExpiry(1<<22, time.Hour)
	require.False(t, e.stop())
	require.False(t, e.stop(), "a second stop neither blocks nor changes the answer")
	var none *expiry
	require.False(t, none.stop())
	require.Nil(t, none.markC())
}
