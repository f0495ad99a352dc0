package agentclient

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/app/agent"
	"github.com/sandgate/sandgate/core/sandbox"
)

// newAgentConn is a Conn to the real agent's handler served in process
// over yamux, as cmd/agent serves it; every proc is removed at the end.
func newAgentConn(t *testing.T) *Conn {
	t.Helper()
	// Not newFake: it reads a POST's body before the handler, and a
	// stdin body must stream.
	f := &fakeAgent{handler: agent.New(agent.Options{})}
	c := New(f.open)
	t.Cleanup(func() {
		_ = c.Close()
		f.cut()
		f.wg.Wait()
	})
	t.Cleanup(func() {
		procs, err := c.Procs(context.Background())
		require.NoError(t, err)
		for _, p := range procs {
			require.NoError(t, c.RemoveProc(context.Background(), p.ID))
		}
	})
	return c
}

// collect reads the proc's output with q into one string per stream.
func collect(t *testing.T, c *Conn, id string, q sandbox.ProcOutputQuery) (map[string]string, []sandbox.ProcChunk, sandbox.ProcInfo) {
	t.Helper()
	out := map[string]string{}
	var chunks []sandbox.ProcChunk
	info, err := c.ProcOutput(t.Context(), id, q, func(ch sandbox.ProcChunk) error {
		out[ch.Stream] += string(ch.Data)
		chunks = append(chunks, ch)
		return nil
	})
	require.NoError(t, err)
	return out, chunks, info
}

func TestProcStartOutputWait(t *testing.T) {
	c := newAgentConn(t)
	p, err := c.StartProc(t.Context(), sandbox.ProcStart{Command: "printf 0123456789; printf E >&2; exit 4", Tag: "t1"})
	require.NoError(t, err)
	require.Equal(t, sandbox.ProcRunning, p.State)
	require.Equal(t, "t1", p.Tag)
	info, err := c.WaitProc(t.Context(), p.ID)
	require.NoError(t, err)
	require.Equal(t, sandbox.ProcExited, info.State)
	require.Equal(t, 4, info.ExitCode)
	require.EqualValues(t, 10, info.StdoutBytes)
	require.False(t, info.EndedAt.IsZero())

	out, chunks, last := collect(t, c, p.ID, sandbox.ProcOutputQuery{Stream: sandbox.StreamStdout, From: 6})
	require.Equal(t, map[string]string{"stdout": "6789"}, out)
	require.EqualValues(t, 6, chunks[0].Offset)
	require.Equal(t, sandbox.ProcExited, last.State)
	out, _, _ = collect(t, c, p.ID, sandbox.ProcOutputQuery{})
	require.Equal(t, map[string]string{"stdout": "0123456789", "stderr": "E"}, out)

	list, err := c.Procs(t.Context())
	require.NoError(t, err)
	require.Len(t, list, 1)
	got, err := c.Proc(t.Context(), p.ID)
	require.NoError(t, err)
	require.Equal(t, info, got)
}

func TestProcOutputDroppedByTheRing(t *testing.T) {
	c := newAgentConn(t)
	p, err := c.StartProc(t.Context(), sandbox.ProcStart{Command: "printf 0123456789", RingBytes: 4})
	require.NoError(t, err)
	_, err = c.WaitProc(t.Context(), p.ID)
	require.NoError(t, err)
	out, chunks, _ := collect(t, c, p.ID, sandbox.ProcOutputQuery{Stream: sandbox.StreamStdout})
	require.Equal(t, "6789", out["stdout"])
	require.Equal(t, sandbox.ProcChunk{Stream: "stdout", Offset: 6, Data: []byte("6789"), Dropped: 6}, chunks[0])
}

// TestProcStdinFollowRoundTrip: stdin goes in as it is sent and its echo
// comes back live on a follow, which ends with the exit.
func TestProcStdinFollowRoundTrip(t *testing.T) {
	c := newAgentConn(t)
	p, err := c.StartProc(t.Context(), sandbox.ProcStart{Command: "cat"})
	require.NoError(t, err)
	pr, pw := io.Pipe()
	fed := make(chan error, 1)
	go func() { fed <- c.ProcStdin(t.Context(), p.ID, pr, true) }()
	seen := make(chan string, 16)
	followed := make(chan error, 1)
	var last sandbox.ProcInfo
	go func() {
		var err error
		last, err = c.ProcOutput(t.Context(), p.ID, sandbox.ProcOutputQuery{Follow: true}, func(ch sandbox.ProcChunk) error {
			seen <- string(ch.Data)
			return nil
		})
		followed <- err
	}()
	for _, line := range []string{"one\n", "two\n"} {
		_, err := pw.Write([]byte(line))
		require.NoError(t, err)
		select {
		case got := <-seen:
			require.Equal(t, line, got, "the echo of a line arrives before the next is sent")
		case <-time.After(10 * time.Second):
			t.Fatal("no echo while stdin stays open")
		}
	}
	require.NoError(t, pw.Close())
	require.NoError(t, <-fed)
	require.NoError(t, <-followed)
	require.Equal(t, sandbox.ProcExited, last.State)
	require.ErrorIs(t, c.ProcStdin(t.Context(), p.ID, strings.NewReader("x"), false), sandbox.ErrStdinClosed)
}

// TestProcStdinRefusedWhileSending: a refusal reaches a sender whose body
// never ends (a terminal's keystrokes).
func TestProcStdinRefusedWhileSending(t *testing.T) {
	c := newAgentConn(t)
	p, err := c.StartProc(t.Context(), sandbox.ProcStart{Command: "exec 0<&-; sleep 0.2"})
	require.NoError(t, err)
	_, err = c.WaitProc(t.Context(), p.ID)
	require.NoError(t, err)
	err = c.ProcStdin(t.Context(), p.ID, endless{}, false)
	require.ErrorIs(t, err, sandbox.ErrStdinClosed)
	require.NoError(t, c.RemoveProc(t.Context(), p.ID))
	err = c.ProcStdin(t.Context(), p.ID, endless{}, false)
	require.ErrorIs(t, err, sandbox.ErrProcNotFound)
}

// endless yields bytes for ever, a little at a time.
type endless struct{}

func (endless) Read(p []byte) (int, error) {
	time.Sleep(time.Millisecond)
	return copy(p, "y\n"), nil
}

func TestProcPTYAndResize(t *testing.T) {
	c := newAgentConn(t)
	p, err := c.StartProc(t.Context(), sandbox.ProcStart{Command: "tty; read x; stty size", TTY: true, Cols: 90, Rows: 20})
	require.NoError(t, err)
	require.NoError(t, c.ResizeProc(t.Context(), p.ID, 132, 43))
	require.NoError(t, c.ProcStdin(t.Context(), p.ID, strings.NewReader("\n"), false))
	_, err = c.WaitProc(t.Context(), p.ID)
	require.NoError(t, err)
	out, _, _ := collect(t, c, p.ID, sandbox.ProcOutputQuery{})
	// The terminal echoes the newline whenever it arrives: before or
	// after tty's answer.
	require.Regexp(t, `/dev/pts/\d+\r\n`, out["stdout"])
	require.True(t, strings.HasSuffix(out["stdout"], "\r\n43 132\r\n"), "%q", out["stdout"])
}

func TestProcSignalAndRemove(t *testing.T) {
	c := newAgentConn(t)
	p, err := c.StartProc(t.Context(), sandbox.ProcStart{Command: "sleep 30"})
	require.NoError(t, err)
	require.NoError(t, c.SignalProc(t.Context(), p.ID, "INT"))
	info, err := c.WaitProc(t.Context(), p.ID)
	require.NoError(t, err)
	require.True(t, info.Signaled)
	require.Equal(t, 128+int(syscall.SIGINT), info.ExitCode)
	require.ErrorIs(t, c.SignalProc(t.Context(), p.ID, "KILL"), sandbox.ErrProcExited)

	q, err := c.StartProc(t.Context(), sandbox.ProcStart{Command: "sleep 30"})
	require.NoError(t, err)
	require.NoError(t, c.RemoveProc(t.Context(), q.ID))
	require.ErrorIs(t, syscall.Kill(q.Pid, 0), syscall.ESRCH, "removal kills")
	_, err = c.Proc(t.Context(), q.ID)
	require.ErrorIs(t, err, sandbox.ErrProcNotFound)
}

func TestProcTooMany(t *testing.T) {
	c := newAgentConn(t)
	for range sandbox.MaxRunningProcs {
		_, err := c.StartProc(t.Context(), sandbox.ProcStart{Command: "sleep 30"})
		require.NoError(t, err)
	}
	_, err := c.StartProc(t.Context(), sandbox.ProcStart{Command: "true"})
	require.ErrorIs(t, err, sandbox.ErrTooManyProcs)
}

// TestProcBadInputFailsHere: what core/sandbox refuses never travels.
func TestProcBadInputFailsHere(t *testing.T) {
	_, c := newFake(t, func(http.ResponseWriter, *http.Request) { t.Error("a bad request reached the agent") })
	ctx := t.Context()
	_, err := c.StartProc(ctx, sandbox.ProcStart{Command: "x", RingBytes: -1})
	require.ErrorIs(t, err, sandbox.ErrInvalidProc)
	_, err = c.Proc(ctx, "Bad/Id")
	require.ErrorIs(t, err, sandbox.ErrInvalidProc)
	require.ErrorIs(t, c.SignalProc(ctx, "abc", "SEGV"), sandbox.ErrInvalidProc)
	require.ErrorIs(t, c.ResizeProc(ctx, "abc", 0, 10), sandbox.ErrInvalidProc)
	_, err = c.ProcOutput(ctx, "abc", sandbox.ProcOutputQuery{Stream: "both"}, nil)
	require.ErrorIs(t, err, sandbox.ErrInvalidProc)
	_, err = c.ProcOutput(ctx, "abc", sandbox.ProcOutputQuery{From: -1}, nil)
	require.ErrorIs(t, err, sandbox.ErrInvalidProc)
}

// TestProcAgentInvalidIsSentinel: the agent's own invalid_argument (an
// agent of another version) is ErrInvalidProc too.
func TestProcAgentInvalidIsSentinel(t *testing.T) {
	_, c := newFake(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"code":"invalid_argument","message":"no"}`)
	})
	require.ErrorIs(t, c.ResizeProc(t.Context(), "abc", 10, 10), sandbox.ErrInvalidProc)
}

// TestProcOutputEndsWithItsContext: a follow of a proc that runs on ends
// when its context does, and fn's error ends it with that error.
func TestProcOutputEndsWithItsContext(t *testing.T) {
	c := newAgentConn(t)
	p, err := c.StartProc(t.Context(), sandbox.ProcStart{Command: "echo hi; sleep 30"})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	_, err = c.ProcOutput(ctx, p.ID, sandbox.ProcOutputQuery{Follow: true}, func(sandbox.ProcChunk) error { return nil })
	require.ErrorIs(t, err, context.DeadlineExceeded)

	stop := errors.New("enough")
	_, err = c.ProcOutput(t.Context(), p.ID, sandbox.ProcOutputQuery{Follow: true}, func(sandbox.ProcChunk) error { return stop })
	require.ErrorIs(t, err, stop)
}

// TestProcOutputWithoutLastLineIsLost: an answer cut before its last line
// is no result.
func TestProcOutputWithoutLastLineIsLost(t *testing.T) {
	_, c := newFake(t, func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `{"stream":"stdout","data":"aGk="}`+"\n")
	})
	var got string
	_, err := c.ProcOutput(t.Context(), "abc", sandbox.ProcOutputQuery{}, func(ch sandbox.ProcChunk) error {
		got += string(ch.Data)
		return nil
	})
	require.ErrorIs(t, err, ErrLost)
	require.Equal(t, "hi", got)
}

// TestPlaneProcs: a sandbox without its agent has no procs; with one,
// they start in the sandbox's workdir unless the request names another.
func TestPlaneProcs(t *testing.T) {
	ctx := t.Context()
	none := Plane{}
	_, err := none.StartProc(ctx, sandbox.ProcStart{Command: "true"})
	require.ErrorIs(t, err, sandbox.ErrNoAgent)
	_, err = none.Procs(ctx)
	require.ErrorIs(t, err, sandbox.ErrNoAgent)
	require.ErrorIs(t, none.RemoveProc(ctx, "abc"), sandbox.ErrNoAgent)
	require.ErrorIs(t, none.ProcStdin(ctx, "abc", strings.NewReader(""), true), sandbox.ErrNoAgent)

	dir := t.TempDir()
	p := Plane{Conn: newAgentConn(t), Workdir: dir}
	proc, err := p.StartProc(ctx, sandbox.ProcStart{Command: "pwd"})
	require.NoError(t, err)
	_, err = p.WaitProc(ctx, proc.ID)
	require.NoError(t, err)
	var out string
	_, err = p.ProcOutput(ctx, proc.ID, sandbox.ProcOutputQuery{}, func(ch sandbox.ProcChunk) error {
		out += string(ch.Data)
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, dir+"\n", out)
	proc, err = p.StartProc(ctx, sandbox.ProcStart{Command: "sleep 30", Workdir: "/"})
	require.NoError(t, err)
	require.NoError(t, p.SignalProc(ctx, proc.ID, "KILL"))
	require.ErrorIs(t, p.ResizeProc(ctx, proc.ID, 10, 10), sandbox.ErrInvalidProc, "the agent refuses: no terminal")
}
