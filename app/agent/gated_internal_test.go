package agent

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestPtraceHoldIsUsed: where ptrace is allowed (this machine, and the
// sandboxes' seccomp profile), a held command is bash itself from the start
// — no second program — and the holder never fell back to the pipe.
func TestPtraceHoldIsUsed(t *testing.T) {
	t.Parallel()
	s := New(Options{Self: "/nonexistent/sandgate-agent"}) // the pipe would fail to start
	out := filepath.Join(t.TempDir(), "out")
	f, err := os.Create(out)
	require.NoError(t, err)
	defer func() { _ = f.Close() }()
	cmd, release, err := s.holder().start(`echo "$$ $(tr '\0' ' ' </proc/$$/cmdline)"`, func(c *exec.Cmd) { c.Stdout = f })
	require.NoError(t, err)
	require.False(t, s.noPtrace.Load(), "ptrace was refused here")
	release(true)
	require.NoError(t, cmd.Wait())
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	require.Contains(t, string(b), "/bin/bash -c")
}

// holdChildEnv makes this test binary the tracer of
// TestPtraceHeldCommandDiesWithItsAgent: it holds a command and exits
// without releasing it.
const holdChildEnv = "SANDGATE_TEST_HOLD_MARKER"

// TestPtraceHeldCommandDiesWithItsAgent: an agent that dies while it holds
// a command (before its pid reached the provider) takes the command with
// it; the kernel does not let it run unseen.
func TestPtraceHeldCommandDiesWithItsAgent(t *testing.T) {
	if marker := os.Getenv(holdChildEnv); marker != "" {
		s := New(Options{Self: "/nonexistent/sandgate-agent"})
		if _, _, err := s.holder().start("touch "+marker, func(*exec.Cmd) {}); err != nil || s.noPtrace.Load() {
			os.Exit(3)
		}
		os.Exit(0) // the tracer dies holding it
	}
	t.Parallel()
	marker := filepath.Join(t.TempDir(), "ran")
	child := exec.Command(os.Args[0], "-test.run=^TestPtraceHeldCommandDiesWithItsAgent$")
	child.Env = append(os.Environ(), holdChildEnv+"="+marker)
	out, err := child.CombinedOutput()
	require.NoError(t, err, "%s", out)
	time.Sleep(300 * time.Millisecond)
	require.NoFileExists(t, marker, "a held command ran after its agent died")
}
