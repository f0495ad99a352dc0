package kubernetes

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/sandbox"
)

// runRelay runs the relay around a bare `bash -c cmd` with the host's bash.
func runRelay(t *testing.T, cmd string) (stdout, stderr string, code int, took time.Duration) {
	t.Helper()
	return runArgv(t, relayArgv([]string{"/bin/bash", "-c", cmd}), nil)
}

// runArgv runs argv as the sandbox would: env (nil: the test's), and a
// lifeline on stdin that stays open until t ends.
func runArgv(t *testing.T, argv, env []string) (stdout, stderr string, code int, took time.Duration) {
	t.Helper()
	c := exec.Command(argv[0], argv[1:]...)
	c.Env = env
	c.Stdin = lifelinePipe(t)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	start := time.Now()
	err := c.Run()
	took = time.Since(start)
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return out.String(), errb.String(), code, took
}

func TestRelayPassesStreamsAndStatus(t *testing.T) {
	t.Parallel()
	out, errs, code, _ := runRelay(t, "echo out; echo err >&2; exit 7")
	require.Equal(t, "out\n", out)
	require.Equal(t, "err\n", errs)
	require.Equal(t, 7, code)
}

func TestRelayLargeOutputWhole(t *testing.T) {
	t.Parallel()
	out, _, code, _ := runRelay(t, "head -c 3000000 /dev/zero | tr '\\0' x")
	require.Equal(t, 0, code)
	require.Len(t, out, 3000000)
}

func TestRelayStragglerDoesNotHold(t *testing.T) {
	t.Parallel()
	// Under the wrapper, as Exec runs it: the wrapper closes the exec's own
	// stderr (fd 8, for its header) before the command starts.
	argv := relayArgv(sandbox.ExecArgv(sandbox.ExecRequest{Command: "sleep 6 & echo $! >&2; echo hi; exit 3"}, ""))
	out, errb, code, took := runArgv(t, argv, nil)
	_, errs, _ := strings.Cut(errb, "\n") // the header
	if pid, err := strconv.Atoi(strings.TrimSpace(errs)); err == nil {
		_ = syscall.Kill(pid, syscall.SIGKILL) // the straggler outlives the relay by design, not the test
	}
	require.Equal(t, "hi\n", out)
	require.Equal(t, 3, code)
	require.Less(t, took, 3*time.Second, "a straggler holding stdout must not hold the relay")
}

func TestRelaySignalDeathIsSilent(t *testing.T) {
	t.Parallel()
	out, errs, code, _ := runRelay(t, "echo before; kill -9 $$")
	require.Equal(t, "before\n", out)
	require.Equal(t, 137, code, "128+SIGKILL, as the runtime reports a signal death")
	require.NotContains(t, errs, "Killed", "the relay's own job report is not the command's stderr: %q", errs)
}

// TestRelayAroundWrapperAddsNothing runs the relay around the core's
// deadline wrapper, as Exec does, and requires both streams byte-exact: the
// only extra bytes are the wrapper's header line on stderr.
func TestRelayAroundWrapperAddsNothing(t *testing.T) {
	t.Parallel()
	const n = 1 << 20
	cmd := "head -c 1048576 /dev/zero | tr '\\0' a; head -c 1048576 /dev/zero | tr '\\0' b >&2"
	argv := relayArgv(sandbox.ExecArgv(sandbox.ExecRequest{Command: cmd, Timeout: 30 * time.Second}, t.TempDir()))
	out, errb, code, _ := runArgv(t, argv, nil)
	require.Equal(t, 0, code)
	require.Len(t, out, n)
	header, rest, ok := strings.Cut(errb, "\n")
	require.True(t, ok)
	require.True(t, strings.HasPrefix(header, sandbox.HeaderPrefix), "header %q", header)
	require.Len(t, rest, n, "stderr after the header: %q", tail(rest))
}

// lifelinePipe is a wrapper's lifeline as the runtime gives it: a pipe
// nothing is written to, open until t ends.
func lifelinePipe(t *testing.T) *os.File {
	t.Helper()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = r.Close(), w.Close() })
	return r
}

func tail(s string) string {
	if len(s) > 100 {
		return s[len(s)-100:]
	}
	return s
}

// TestRelayGivesTheWrapperAGroupWithoutSetsid runs the relay around the
// deadline wrapper with a PATH that has no setsid (as in an image without
// util-linux): the wrapper must still lead a process group, so that the
// deadline kills the command and what it started (C-EXEC-3).
func TestRelayGivesTheWrapperAGroupWithoutSetsid(t *testing.T) {
	t.Parallel()
	bin := t.TempDir()
	for _, tool := range []string{"cat", "sleep"} {
		p, err := exec.LookPath(tool)
		require.NoError(t, err)
		require.NoError(t, os.Symlink(p, filepath.Join(bin, tool)))
	}
	cmd := "sleep 8 & echo $!; sleep 8"
	argv := relayArgv(sandbox.ExecArgv(sandbox.ExecRequest{Command: cmd, Timeout: time.Second}, ""))
	out, errb, code, took := runArgv(t, argv, []string{"PATH=" + bin})
	require.Equal(t, 137, code, "the wrapper's group was SIGKILLed; stderr %q", errb)
	require.Less(t, took, 5*time.Second, "the deadline must end the command")
	require.Contains(t, errb, "exceeded its 1 s deadline")
	pid, err := strconv.Atoi(strings.TrimSpace(out))
	require.NoError(t, err, "stdout %q", out)
	require.Eventually(t, func() bool { return !alive(pid) }, 2*time.Second, 20*time.Millisecond,
		"the command's background sleep (pid %d) must die with its group", pid)
}

// alive reports whether pid is a live (not zombie) process.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	s = s[strings.LastIndexByte(s, ')')+2:]
	return s[0] != 'Z' && s[0] != 'X'
}
