package sandbox

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/sandbox/shell"
)

// startGroup starts `sleep 30` as the leader of a new session, like a
// wrapper, and returns it; it is killed when t ends.
func startGroup(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "30")
	startKilled(t, cmd, &syscall.SysProcAttr{Setsid: true})
	return cmd
}

// startGroupOf starts cmd as the leader of a process group of its own; the
// group is killed when t ends.
func startGroupOf(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	startKilled(t, cmd, &syscall.SysProcAttr{Setpgid: true})
}

// startKilled starts cmd leading a group (attr: Setsid or Setpgid) and
// SIGKILLs the whole group when t ends: killing only cmd would leave what
// it started (the keep-alive's `sleep 3600`) running, orphaned.
func startKilled(t *testing.T, cmd *exec.Cmd, attr *syscall.SysProcAttr) {
	t.Helper()
	cmd.SysProcAttr = attr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
}

// deadGroup returns the pid of a process that has exited and been reaped,
// so no group has it as its id.
func deadGroup(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	require.NoError(t, cmd.Run())
	return cmd.Process.Pid
}

// leaderlessGroup returns a process group whose leader has exited and been
// reaped while a member (a sleep) lives on; the group is killed when t ends.
func leaderlessGroup(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("/bin/bash", "-c", "sleep 30 </dev/null >/dev/null 2>&1 & exit 0")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	require.NoError(t, cmd.Run())
	pgid := cmd.Process.Pid
	t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
	alive, err := groupAlive(pgid)
	require.NoError(t, err)
	require.True(t, alive)
	return pgid
}

// zombieGroup returns a process group whose only member is a zombie: a
// child that made its own session and exited, under a parent that never
// reaps it. The child exits only once the parent has become `sleep`:
// exiting earlier would let bash reap it before its exec.
func zombieGroup(t *testing.T) int {
	t.Helper()
	release, hold, err := os.Pipe()
	require.NoError(t, err)
	defer func() { _ = release.Close() }()
	parent := exec.Command("/bin/bash", "-c", `setsid /bin/bash -c 'read -r _ <&3' & echo $!; exec sleep 30`)
	parent.ExtraFiles = []*os.File{release}
	out, err := parent.StdoutPipe()
	require.NoError(t, err)
	t.Cleanup(func() { _ = hold.Close() }) // the child ends even when t fails early
	startGroupOf(t, parent)
	line := make([]byte, 16)
	n, err := out.Read(line)
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(line[:n])))
	require.NoError(t, err)
	comm := "/proc/" + strconv.Itoa(parent.Process.Pid) + "/comm"
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(comm)
		return err == nil && strings.TrimSpace(string(b)) == "sleep"
	}, 10*time.Second, 10*time.Millisecond, "parent never became sleep")
	require.NoError(t, hold.Close())
	require.Eventually(t, func() bool {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		return err == nil && strings.Contains(string(b), ") Z ")
	}, 10*time.Second, 10*time.Millisecond, "child never became a zombie")
	return pid
}

func TestGroupProbe(t *testing.T) {
	t.Parallel()
	live := startGroup(t).Process.Pid
	zombie := zombieGroup(t)
	require.NoError(t, syscall.Kill(-zombie, 0), "kill -0 counts a zombie as alive; the probe must not")
	tests := []struct {
		name string
		pid  int
		want bool
	}{
		{name: "live group", pid: live, want: true},
		{name: "gone group", pid: deadGroup(t)},
		{name: "group of zombies", pid: zombie},
	}
	for _, tt := range tests {
		alive, err := groupAlive(tt.pid)
		require.NoError(t, err, tt.name)
		require.Equal(t, tt.want, alive, tt.name)
	}
}

func TestKillGroup(t *testing.T) {
	t.Parallel()
	cmd := startGroup(t)
	argv, err := KillGroupArgv(cmd.Process.Pid)
	require.NoError(t, err)
	code, err := runScript(argv)
	require.NoError(t, err)
	require.Equal(t, 0, code, "signal sent")
	err = cmd.Wait()
	require.Error(t, err)
	require.Equal(t, syscall.SIGKILL, cmd.ProcessState.Sys().(syscall.WaitStatus).Signal())

	argv, err = KillGroupArgv(deadGroup(t))
	require.NoError(t, err)
	code, err = runScript(argv)
	require.NoError(t, err)
	require.Equal(t, 1, code, "no such group")
}

// watchdogScript cuts the watchdog D out of the wrapper: the block it
// starts as `{ … } >/dev/null &`, at the start of a line.
func watchdogScript(t *testing.T) string {
	t.Helper()
	_, rest, ok := strings.Cut(shell.ExecWrapper, "\n{\n")
	require.True(t, ok, "the wrapper starts no watchdog block")
	body, _, ok := strings.Cut(rest, "\n} >/dev/null &\n")
	require.True(t, ok, "the watchdog block does not end")
	return body
}

// TestWatchdog runs the watchdog on its own, in its own session as the
// wrapper starts it, with a lifeline on stdin that stays open or is closed
// (the caller left).
func TestWatchdog(t *testing.T) {
	t.Parallel()
	watchdog := watchdogScript(t)
	tests := []struct {
		name       string
		secs       string
		leave      time.Duration // close the lifeline after this long; 0: keep it open
		group      bool          // a live group to guard (false: a gone group)
		leaderGone bool          // the group lives on without its leader (the command killed W)
		wantStderr string
		wantKilled bool
		min, max   time.Duration // how long the watchdog runs
	}{
		{name: "kills a live group at the deadline", secs: "1", group: true, wantStderr: mark, wantKilled: true,
			min: time.Second, max: 3 * time.Second},
		{name: "quiet when the group is gone", secs: "1", min: time.Second, max: 3 * time.Second},
		{name: "the caller leaves before the deadline: a quiet kill", secs: "30", leave: 200 * time.Millisecond,
			group: true, wantKilled: true, min: 200 * time.Millisecond, max: 3 * time.Second},
		{name: "the caller leaves a gone group", secs: "30", leave: 200 * time.Millisecond,
			min: 200 * time.Millisecond, max: 3 * time.Second},
		// Kubernetes' runtime closes the lifeline when the exec ends, which a
		// command that kills W brings about: the deadline still holds.
		{name: "the lifeline ends after the command killed W: the deadline holds", secs: "1", leave: 200 * time.Millisecond,
			leaderGone: true, wantStderr: mark, wantKilled: true, min: time.Second, max: 3 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pgid := deadGroup(t)
			switch {
			case tt.group:
				pgid = startGroup(t).Process.Pid
			case tt.leaderGone:
				pgid = leaderlessGroup(t)
			}
			lifeline, caller, err := os.Pipe()
			require.NoError(t, err)
			t.Cleanup(func() { _, _ = lifeline.Close(), caller.Close() })
			var stderr bytes.Buffer
			// r: the parent W started under, as the wrapper records it —
			// this process, which started the group's leader.
			wd := exec.Command("/bin/bash", "-c", "w=$2 r=$3\n"+watchdog, "sandgate-watchdog", tt.secs, strconv.Itoa(pgid), strconv.Itoa(os.Getpid()))
			wd.Stdin, wd.Stderr = lifeline, &stderr
			wd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
			start := time.Now() // before the caller's timer, which min counts from
			if tt.leave > 0 {
				time.AfterFunc(tt.leave, func() { _ = caller.Close() })
			}
			code, err := runCmd(wd)
			took := time.Since(start)
			require.NoError(t, err)
			require.Equal(t, 0, code)
			require.GreaterOrEqual(t, took, tt.min)
			require.Less(t, took, tt.max)
			require.Equal(t, tt.wantStderr, stderr.String())
			if tt.group || tt.leaderGone {
				alive, err := groupAlive(pgid)
				require.NoError(t, err)
				require.Equal(t, !tt.wantKilled, alive)
			}
		})
	}
}
