package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestShellQuote(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "plain", "it's", "$(touch pwned)", "a\nb", "'; rm -rf / #", `\"`} {
		out, err := exec.Command("/bin/bash", "-c", "printf %s "+ShellQuote(s)).Output()
		require.NoError(t, err)
		require.Equal(t, s, string(out))
	}
}

// The keep-alive command makes a hostile workdir verbatim and keeps running.
func TestKeepAliveArgv(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "it's $(touch pwned) dir")
	argv := KeepAliveArgv(dir)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = t.TempDir()
	startGroupOf(t, cmd)
	require.Eventually(t, func() bool {
		fi, err := os.Stat(dir)
		return err == nil && fi.IsDir()
	}, 5*time.Second, 10*time.Millisecond)
	_, err := os.Stat(filepath.Join(cmd.Dir, "pwned"))
	require.ErrorIs(t, err, os.ErrNotExist)
	time.Sleep(50 * time.Millisecond)
	require.Nil(t, cmd.ProcessState, "the main process keeps running")
}
