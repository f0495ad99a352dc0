package proctest

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) { Main(m) }

// Check finds a child started with an environment of its own (by its
// parent) and an orphan that left its group (by the mark), fails naming
// them, and kills them.
func TestCheckFindsChildrenAndOrphans(t *testing.T) {
	mark := strings.TrimPrefix(Mark(), MarkEnv+"=")
	require.NotEmpty(t, mark, "Main sets the mark")

	child := exec.Command("sleep", "30")
	child.Env = []string{}
	require.NoError(t, child.Start())
	waited := make(chan struct{})
	go func() { _ = child.Wait(); close(waited) }()
	t.Cleanup(func() { _ = child.Process.Kill(); <-waited })

	out, err := exec.Command("/bin/bash", "-c", "setsid sleep 30 </dev/null >/dev/null 2>&1 & echo $!").Output()
	require.NoError(t, err)
	orphan, err := strconv.Atoi(strings.TrimSpace(string(out)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = syscall.Kill(orphan, syscall.SIGKILL) })

	require.Eventually(t, func() bool {
		pids := map[int]bool{}
		for _, p := range Leaked(os.Getpid(), mark) {
			pids[p.Pid] = true
		}
		return pids[child.Process.Pid] && pids[orphan]
	}, 5*time.Second, 20*time.Millisecond, "both are found")

	err = Check(os.Getpid(), mark, 100*time.Millisecond)
	require.ErrorContains(t, err, "pid "+strconv.Itoa(child.Process.Pid)+" ")
	require.ErrorContains(t, err, "pid "+strconv.Itoa(orphan)+" ")
	require.ErrorContains(t, err, "sleep 30")
	<-waited
	require.NoError(t, Check(os.Getpid(), mark, 5*time.Second), "killed: nothing is left")
}
