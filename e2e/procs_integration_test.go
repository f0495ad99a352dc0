//go:build integration

package e2e_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sandgate/sandgate/adapters/httpapi"
	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/core/session"
)

// procSession starts an executor and a session on Docker (over the agent).
func procSession(t *testing.T) (*proc, *httpapi.Client, domain.ID) {
	t.Helper()
	w := newWorld(t)
	p := w.start(t, "procs", nil)
	c := p.client(t)
	sid := domain.NewID("ses")
	_, err := c.Provision(ctxFor(t), sid, session.Request{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Delete(context.WithoutCancel(ctxFor(t)), sid, false) })
	return p, c, sid
}

// TestProcsEndToEnd: through a real `executor serve` on Docker, a
// background proc outlives the client that followed it and is read again
// from an offset; stdin round-trips; a PTY answers `tty` with a device and
// sees a resize in `stty size`; the exit code is kept.
func TestProcsEndToEnd(t *testing.T) {
	_, c, sid := procSession(t)
	ctx := ctxFor(t)
	procs := c.Procs(sid)

	bg, err := procs.StartProc(ctx, sandbox.ProcStart{Command: "echo first; sleep 2; echo second; echo oops >&2; exit 3"})
	require.NoError(t, err)
	// A client follows, then goes away after the first line.
	follow, cancel := context.WithCancel(ctx)
	_, err = procs.ProcOutput(follow, bg.ID, sandbox.ProcOutputQuery{Follow: true}, func(ch sandbox.ProcChunk) error {
		require.Equal(t, "first\n", string(ch.Data))
		cancel()
		return nil
	})
	require.Error(t, err, "the follow was cut")
	end, err := procs.WaitProc(ctx, bg.ID)
	require.NoError(t, err)
	require.Equal(t, 3, end.ExitCode, "the proc ran on without its client")
	var rest strings.Builder
	_, err = procs.ProcOutput(ctx, bg.ID, sandbox.ProcOutputQuery{Stream: sandbox.StreamStdout, From: 6}, func(ch sandbox.ProcChunk) error {
		rest.Write(ch.Data)
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, "second\n", rest.String(), "read again from an offset")
	list, err := procs.Procs(ctx)
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.NoError(t, procs.RemoveProc(ctx, bg.ID))

	cat, err := procs.StartProc(ctx, sandbox.ProcStart{Command: "tr a-z A-Z"})
	require.NoError(t, err)
	require.NoError(t, procs.ProcStdin(ctx, cat.ID, strings.NewReader("round trip\n"), true))
	var upper strings.Builder
	end, err = procs.ProcOutput(ctx, cat.ID, sandbox.ProcOutputQuery{Follow: true}, func(ch sandbox.ProcChunk) error {
		upper.Write(ch.Data)
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, "ROUND TRIP\n", upper.String())
	require.Equal(t, 0, end.ExitCode)

	sh, err := procs.StartProc(ctx, sandbox.ProcStart{Command: "exec bash --norc", TTY: true, Cols: 80, Rows: 24})
	require.NoError(t, err)
	att, err := c.AttachProc(ctx, sid, sh.ID, 0)
	require.NoError(t, err)
	defer func() { _ = att.Close() }()
	var screen strings.Builder
	_, err = att.Write([]byte("tty; echo MARK-$((6*7))\n"))
	require.NoError(t, err)
	resized := false
	end, err = att.Output(func(_ string, data []byte) error {
		screen.Write(data)
		switch {
		case !resized && strings.Contains(screen.String(), "MARK-42"):
			resized = true
			require.NoError(t, att.Resize(123, 45))
			_, err := att.Write([]byte("stty size; exit 7\n"))
			return err
		}
		return nil
	})
	require.NoError(t, err, screen.String())
	require.Regexp(t, `/dev/pts/\d+`, screen.String())
	require.Contains(t, screen.String(), "45 123")
	require.Equal(t, 7, end.ExitCode)
}

// TestProcOutlivesAnExecutorRestart: a background proc keeps running when
// its executor is SIGKILLed (the agent's daemon owns it, not the stream),
// and the next executor on the same store and key lists it and reads its
// output from an offset.
func TestProcOutlivesAnExecutorRestart(t *testing.T) {
	w := newWorld(t)
	settings := sqliteSettings(t.TempDir())
	first := w.start(t, "first", settings)
	c := first.client(t)
	ctx := ctxFor(t)
	sid := domain.NewID("ses")
	_, err := c.Provision(ctx, sid, session.Request{})
	require.NoError(t, err)
	bg, err := c.Procs(sid).StartProc(ctx, sandbox.ProcStart{Command: "echo one; sleep 1; echo two; exec sleep 300"})
	require.NoError(t, err)
	stdout := func(c *httpapi.Client, from int64) string {
		var out strings.Builder
		_, err := c.Procs(sid).ProcOutput(ctx, bg.ID, sandbox.ProcOutputQuery{Stream: sandbox.StreamStdout, From: from},
			func(ch sandbox.ProcChunk) error { out.Write(ch.Data); return nil })
		require.NoError(t, err)
		return out.String()
	}
	require.Eventually(t, func() bool { return stdout(c, 0) != "" }, 30*time.Second, 50*time.Millisecond)
	first.kill(t)

	second := w.start(t, "second", settings)
	c = second.client(t)
	t.Cleanup(func() { _ = c.Delete(context.WithoutCancel(ctx), sid, false) })
	list, err := c.Procs(sid).Procs(ctx)
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, bg.ID, list[0].ID)
	require.Equal(t, sandbox.ProcRunning, list[0].State, "the proc outlived its executor")
	require.Eventually(t, func() bool { return stdout(c, int64(len("one\n"))) == "two\n" }, 30*time.Second, 50*time.Millisecond,
		"read from an offset through the new executor")
	require.NoError(t, c.Procs(sid).RemoveProc(ctx, bg.ID))
}

// TestShellUnderARealTerminal: `executor shell` on a real pseudo-terminal:
// the sandbox's terminal is a device, a window change reaches it, the exit
// code is the shell's, and the CLI's terminal is restored.
func TestShellUnderARealTerminal(t *testing.T) {
	p, _, sid := procSession(t)
	ptmx, tty, err := pty.Open()
	require.NoError(t, err)
	defer func() { _ = ptmx.Close(); _ = tty.Close() }()
	require.NoError(t, pty.Setsize(ptmx, &pty.Winsize{Cols: 100, Rows: 30}))
	before, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
	require.NoError(t, err)

	cmd := exec.Command(executorBinary(t), "shell", sid.String(), "--", "exec bash --norc")
	cmd.Env = append(os.Environ(), "SANDGATE_URL="+p.url, "SANDGATE_API_TOKEN="+procToken)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &unix.SysProcAttr{Setsid: true, Setctty: true}
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	screen := &screenReader{r: bufio.NewReader(ptmx)}
	_, err = ptmx.WriteString("tty; stty size; echo MARK-$((6*7))\n")
	require.NoError(t, err)
	got := screen.until(t, "MARK-42\r\n")
	require.Regexp(t, `/dev/pts/\d+`, got)
	require.Contains(t, got, "30 100", "the CLI's own size at the start")
	require.NoError(t, pty.Setsize(ptmx, &pty.Winsize{Cols: 132, Rows: 43}))
	// The resize travels by SIGWINCH to the CLI, then to the agent: ask
	// until the sandbox's terminal has it.
	var size string
	for range 20 {
		_, err = ptmx.WriteString("stty size; echo END-$((1+1))\n")
		require.NoError(t, err)
		if size = screen.until(t, "END-2\r\n"); strings.Contains(size, "43 132") {
			break
		}
		time.Sleep(300 * time.Millisecond)
	}
	require.Contains(t, size, "43 132", "SIGWINCH reached the sandbox's terminal")
	_, err = ptmx.WriteString("exit 5\n")
	require.NoError(t, err)
	select {
	case err := <-done:
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee)
		require.Equal(t, 5, ee.ExitCode(), "the shell's exit code")
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		require.FailNow(t, "the CLI did not end with its shell")
	}
	after, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
	require.NoError(t, err)
	require.Equal(t, *before, *after, "the terminal is restored")
}

// screenReader reads a terminal's output for tests, with a deadline.
type screenReader struct {
	r *bufio.Reader
}

// until reads until the output seen since the last call contains marker,
// and returns it.
func (s *screenReader) until(t *testing.T, marker string) string {
	t.Helper()
	found := make(chan string, 1)
	go func() {
		var got strings.Builder
		for !strings.Contains(got.String(), marker) {
			b, err := s.r.ReadByte()
			if err != nil {
				break
			}
			got.WriteByte(b)
		}
		found <- got.String()
	}()
	select {
	case got := <-found:
		require.Contains(t, got, marker)
		return got
	case <-time.After(20 * time.Second):
		require.FailNow(t, "no "+marker+" on the terminal")
		return ""
	}
}
