package agent_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/app/agent"
	"github.com/sandgate/sandgate/core/agentwire"
	"github.com/sandgate/sandgate/core/sandbox"
)

func TestProcOutputFromOffsets(t *testing.T) {
	t.Parallel()
	base := newProcServer(t)
	p := startProc(t, base, agentwire.ProcStart{Command: "printf 0123456789abcdef; printf EE >&2", Tag: "build"})
	require.Equal(t, "build", p.Tag)
	info := waitProc(t, base, p.ID)
	require.Equal(t, 0, info.ExitCode)
	require.False(t, info.Signaled)
	require.EqualValues(t, 16, info.StdoutBytes)
	require.EqualValues(t, 2, info.StderrBytes)

	o := readOutput(t, base, p.ID, agentwire.QueryStream, "stdout", agentwire.QueryFrom, "4")
	require.Equal(t, "456789abcdef", o.text("stdout"))
	require.EqualValues(t, 4, o.chunks[0].Offset)
	require.Zero(t, o.chunks[0].Dropped)
	require.Equal(t, "exited", o.last.Exit.State)

	both := readOutput(t, base, p.ID)
	require.Equal(t, "0123456789abcdef", both.text("stdout"))
	require.Equal(t, "EE", both.text("stderr"))

	none := readOutput(t, base, p.ID, agentwire.QueryStream, "stderr", agentwire.QueryFrom, "99")
	require.Empty(t, none.chunks, "an offset past the end reads nothing")
}

func TestProcOutputDropped(t *testing.T) {
	t.Parallel()
	base := newProcServer(t)
	p := startProc(t, base, agentwire.ProcStart{Command: "printf 0123456789abcdef", RingBytes: 8})
	waitProc(t, base, p.ID)
	o := readOutput(t, base, p.ID, agentwire.QueryStream, "stdout")
	require.Equal(t, "89abcdef", o.text("stdout"))
	require.EqualValues(t, 8, o.chunks[0].Offset)
	require.EqualValues(t, 8, o.chunks[0].Dropped, "the first chunk says what the ring lost")
	o = readOutput(t, base, p.ID, agentwire.QueryStream, "stdout", agentwire.QueryFrom, "10")
	require.Equal(t, "abcdef", o.text("stdout"))
	require.Zero(t, o.chunks[0].Dropped)
}

// TestProcFollowIsLive: a chunk written after the follow began arrives
// while the proc still runs, and the answer ends once it exits.
func TestProcFollowIsLive(t *testing.T) {
	t.Parallel()
	base := newProcServer(t)
	p := startProc(t, base, agentwire.ProcStart{Command: "cat"})
	resp := openOutput(t, t.Context(), base, p.ID, agentwire.QueryFollow, "1")
	defer func() { _ = resp.Body.Close() }()
	got := make(chan time.Time, 4)
	done := make(chan output, 1)
	failed := make(chan error, 1)
	go func() {
		o, err := scanOutput(resp.Body, func(agentwire.ProcChunk) { got <- time.Now() })
		failed <- err
		done <- o
	}()
	sent := time.Now()
	sendStdin(t, base, p.ID, "live\n", false)
	select {
	case at := <-got:
		require.Less(t, at.Sub(sent), 2*time.Second)
	case <-time.After(10 * time.Second):
		t.Fatal("no chunk while the proc runs")
	}
	var info agentwire.ProcInfo
	getJSON(t, base, procRoute(agentwire.PathProc, p.ID), &info)
	require.Equal(t, "running", info.State)
	sendStdin(t, base, p.ID, "", true)
	require.NoError(t, <-failed)
	o := <-done
	require.Equal(t, "live\n", o.text("stdout"))
	require.Equal(t, "exited", o.last.Exit.State)
	require.Equal(t, 0, o.last.Exit.ExitCode)
}

func TestProcStdinRoundTrip(t *testing.T) {
	t.Parallel()
	base := newProcServer(t)
	p := startProc(t, base, agentwire.ProcStart{Command: "cat; echo done >&2"})
	big := strings.Repeat("0123456789", 100_000) // past a pipe's buffer: back-pressure, not loss
	sendStdin(t, base, p.ID, big, false)
	sendStdin(t, base, p.ID, "tail", true)
	waitProc(t, base, p.ID)
	o := readOutput(t, base, p.ID)
	require.Equal(t, big+"tail", o.text("stdout"))
	require.Equal(t, "done\n", o.text("stderr"))
	requireFault(t, procDo(t, http.MethodPost, base, agentwire.PathProcStdin, p.ID, strings.NewReader("x")),
		http.StatusConflict, agentwire.CodeStdinClosed)
}

func TestProcCloseStdin(t *testing.T) {
	t.Parallel()
	base := newProcServer(t)
	p := startProc(t, base, agentwire.ProcStart{Command: "wc -c"})
	sendStdin(t, base, p.ID, "", true)
	info := waitProc(t, base, p.ID)
	require.Equal(t, 0, info.ExitCode)
	require.Equal(t, "0\n", readOutput(t, base, p.ID).text("stdout"))

	gone := startProc(t, base, agentwire.ProcStart{Command: "exec 0<&-; exit 0"})
	waitProc(t, base, gone.ID)
	requireFault(t, procDo(t, http.MethodPost, base, agentwire.PathProcStdin, gone.ID, strings.NewReader("x")),
		http.StatusConflict, agentwire.CodeStdinClosed)
}

func TestProcSignal(t *testing.T) {
	t.Parallel()
	base := newProcServer(t)
	p := startProc(t, base, agentwire.ProcStart{Command: "sleep 30 & wait"})
	requireFault(t, procDo(t, http.MethodPost, base, agentwire.PathProcSignal, p.ID, nil, agentwire.QuerySignal, "BOGUS"),
		http.StatusBadRequest, agentwire.CodeInvalid)
	requireNoContent(t, procDo(t, http.MethodPost, base, agentwire.PathProcSignal, p.ID, nil, agentwire.QuerySignal, "TERM"))
	info := waitProc(t, base, p.ID)
	require.Equal(t, 128+int(syscall.SIGTERM), info.ExitCode)
	require.True(t, info.Signaled)
	eventually(t, 5*time.Second, func() bool { return syscall.Kill(-p.Pid, 0) != nil }, "the whole group got the signal")
	requireFault(t, procDo(t, http.MethodPost, base, agentwire.PathProcSignal, p.ID, nil, agentwire.QuerySignal, "KILL"),
		http.StatusConflict, agentwire.CodeProcExited)
}

// TestProcPTY: the proc's stdio is a terminal of the asked size, and a
// resize is what `stty size` sees next.
func TestProcPTY(t *testing.T) {
	t.Parallel()
	base := newProcServer(t)
	p := startProc(t, base, agentwire.ProcStart{Command: `tty; stty size; read x; echo "got $x"; stty size; echo $TERM`,
		TTY: true, Cols: 100, Rows: 30})
	require.True(t, p.TTY)
	eventually(t, 5*time.Second, func() bool {
		return strings.Contains(readOutput(t, base, p.ID).text("stdout"), "30 100")
	}, "stty size sees the asked size")
	requireNoContent(t, resize(t, base, p.ID, "120", "40"))
	sendStdin(t, base, p.ID, "go\n", false)
	waitProc(t, base, p.ID)
	out := readOutput(t, base, p.ID, agentwire.QueryFollow, "1")
	require.Regexp(t, `^/dev/pts/\d+\r\n30 100\r\n`, out.text("stdout"))
	require.Contains(t, out.text("stdout"), "got go\r\n40 120\r\n")
	require.Empty(t, out.text("stderr"), "a terminal has one stream")
	term := os.Getenv("TERM")
	if term == "" {
		term = "xterm-256color" // the agent's default when its environment has none
	}
	require.True(t, strings.HasSuffix(out.text("stdout"), "\r\n"+term+"\r\n"), "%q", out.text("stdout"))
	requireFault(t, resize(t, base, p.ID, "0", "40"), http.StatusBadRequest, agentwire.CodeInvalid)
	requireFault(t, resize(t, base, p.ID, "1001", "40"), http.StatusBadRequest, agentwire.CodeInvalid)
}

func TestProcPTYCloseStdinSendsEOF(t *testing.T) {
	t.Parallel()
	base := newProcServer(t)
	p := startProc(t, base, agentwire.ProcStart{Command: "cat >/dev/null; echo eof", TTY: true})
	sendStdin(t, base, p.ID, "line\n", true)
	require.Equal(t, 0, waitProc(t, base, p.ID).ExitCode)
	require.Contains(t, readOutput(t, base, p.ID, agentwire.QueryFollow, "1").text("stdout"), "eof")
}

func TestProcResizeNeedsPTY(t *testing.T) {
	t.Parallel()
	base := newProcServer(t)
	p := startProc(t, base, agentwire.ProcStart{Command: "true"})
	requireFault(t, resize(t, base, p.ID, "80", "24"), http.StatusBadRequest, agentwire.CodeInvalid)
	requireFault(t, resize(t, base, p.ID, "x", "24"), http.StatusBadRequest, agentwire.CodeInvalid)
}

// TestProcWaitEndsWithItsCaller: a wait whose caller goes away returns.
func TestProcWaitEndsWithItsCaller(t *testing.T) {
	t.Parallel()
	base := newProcServer(t)
	p := startProc(t, base, agentwire.ProcStart{Command: "sleep 30"})
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+procRoute(agentwire.PathProcWait, p.ID), nil)
	require.NoError(t, err)
	_, err = http.DefaultClient.Do(req)
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestProcRemoveKillsTheGroup(t *testing.T) {
	t.Parallel()
	base := newProcServer(t)
	p := startProc(t, base, agentwire.ProcStart{Command: "sleep 30 & sleep 30"})
	follow := openOutput(t, t.Context(), base, p.ID, agentwire.QueryFollow, "1")
	defer func() { _ = follow.Body.Close() }()
	requireNoContent(t, procDo(t, http.MethodDelete, base, agentwire.PathProc, p.ID, nil))
	eventually(t, 5*time.Second, func() bool { return syscall.Kill(-p.Pid, 0) != nil }, "the group is killed")
	o := decodeOutput(t, follow.Body, nil)
	require.Equal(t, "exited", o.last.Exit.State, "a follower ends when its proc is removed")
	requireFault(t, procDo(t, http.MethodGet, base, agentwire.PathProc, p.ID, nil),
		http.StatusNotFound, agentwire.CodeProcNotFound)
	requireFault(t, procDo(t, http.MethodDelete, base, agentwire.PathProc, p.ID, nil),
		http.StatusNotFound, agentwire.CodeProcNotFound)
	require.Empty(t, listProcs(t, base))
}

func TestProcLimitRunning(t *testing.T) {
	t.Parallel()
	base := newProcServer(t)
	for range sandbox.MaxRunningProcs {
		startProc(t, base, agentwire.ProcStart{Command: "sleep 30"})
	}
	requireFault(t, postProc(t, base, agentwire.ProcStart{Command: "true"}),
		http.StatusTooManyRequests, agentwire.CodeTooManyProcs)
	first := listProcs(t, base)[0]
	requireNoContent(t, procDo(t, http.MethodDelete, base, agentwire.PathProc, first.ID, nil))
	startProc(t, base, agentwire.ProcStart{Command: "true"})
}

// TestProcExitedEvicted: past MaxExitedProcs exited procs, the oldest goes.
func TestProcExitedEvicted(t *testing.T) {
	t.Parallel()
	base := newProcServer(t)
	var ids []string
	for range sandbox.MaxExitedProcs + 1 {
		p := startProc(t, base, agentwire.ProcStart{Command: "exit 3"})
		require.Equal(t, 3, waitProc(t, base, p.ID).ExitCode)
		ids = append(ids, p.ID)
	}
	eventually(t, 5*time.Second, func() bool { return len(listProcs(t, base)) == sandbox.MaxExitedProcs }, "evicted")
	requireFault(t, procDo(t, http.MethodGet, base, agentwire.PathProc, ids[0], nil),
		http.StatusNotFound, agentwire.CodeProcNotFound)
	require.Equal(t, ids[1], listProcs(t, base)[0].ID, "oldest first")
}

func TestProcBadInput(t *testing.T) {
	t.Parallel()
	base := newProcServer(t)
	for name, req := range map[string]agentwire.ProcStart{
		"ring too large":       {Command: "true", RingBytes: sandbox.MaxRingBytes + 1},
		"negative ring":        {Command: "true", RingBytes: -1},
		"tag too long":         {Command: "true", Tag: strings.Repeat("t", sandbox.MaxProcTagBytes+1)},
		"workdir missing":      {Command: "true", Workdir: "/nonexistent-dir"},
		"size without a tty":   {Command: "true", Cols: 80, Rows: 24},
		"terminal too large":   {Command: "true", TTY: true, Cols: 80, Rows: 1001},
		"NUL in the command":   {Command: "a\x00b"},
		"command too long":     {Command: strings.Repeat("x", sandbox.MaxCommandBytes+1)},
		"half a terminal size": {Command: "true", TTY: true, Cols: 80},
	} {
		t.Run(name, func(t *testing.T) {
			requireFault(t, postProc(t, base, req), http.StatusBadRequest, agentwire.CodeInvalid)
		})
	}
	requireFault(t, do(t, http.MethodPost, base, agentwire.PathProcs, nil, strings.NewReader(`{"command":"true","x":1}`)),
		http.StatusBadRequest, agentwire.CodeInvalid)
	requireFault(t, procDo(t, http.MethodGet, base, agentwire.PathProc, "NOT-AN-ID", nil),
		http.StatusBadRequest, agentwire.CodeInvalid)
	requireFault(t, procDo(t, http.MethodGet, base, agentwire.PathProc, "abc123", nil),
		http.StatusNotFound, agentwire.CodeProcNotFound)
	requireFault(t, procDo(t, http.MethodPost, base, agentwire.PathProcStdin, "abc123", strings.NewReader("x")),
		http.StatusNotFound, agentwire.CodeProcNotFound)
	p := startProc(t, base, agentwire.ProcStart{Command: "true"})
	for _, kv := range [][]string{
		{agentwire.QueryStream, "both"},
		{agentwire.QueryFrom, "-1"},
		{agentwire.QueryFrom, "x"},
		{agentwire.QueryFollow, "maybe"},
	} {
		requireFault(t, procDo(t, http.MethodGet, base, agentwire.PathProcOutput, p.ID, nil, kv...),
			http.StatusBadRequest, agentwire.CodeInvalid)
	}
	requireFault(t, procDo(t, http.MethodPost, base, agentwire.PathProcStdin, p.ID, nil, agentwire.QueryClose, "maybe"),
		http.StatusBadRequest, agentwire.CodeInvalid)
}

// TestKillAllKillsProcs: when the agent's caller is gone for good, its
// procs die with its execs (until procs outlive the agent's stream).
func TestKillAllKillsProcs(t *testing.T) {
	t.Parallel()
	srv := agent.New(agent.Options{})
	base := serveProcs(t, srv)
	p := startProc(t, base, agentwire.ProcStart{Command: "sleep 30"})
	srv.KillAll()
	info := waitProc(t, base, p.ID)
	require.Equal(t, 128+int(syscall.SIGKILL), info.ExitCode)
}

// TestProcListAndGet: the list has every proc oldest first, in the state
// GET answers.
func TestProcListAndGet(t *testing.T) {
	t.Parallel()
	base := newProcServer(t)
	a := startProc(t, base, agentwire.ProcStart{Command: "sleep 30", Tag: "a"})
	b := startProc(t, base, agentwire.ProcStart{Command: "exit 0", Tag: "b"})
	waitProc(t, base, b.ID)
	list := listProcs(t, base)
	require.Len(t, list, 2)
	require.Equal(t, []string{a.ID, b.ID}, []string{list[0].ID, list[1].ID})
	require.Equal(t, "running", list[0].State)
	require.Nil(t, list[0].EndedAt)
	require.Equal(t, "exited", list[1].State)
	var got agentwire.ProcInfo
	getJSON(t, base, procRoute(agentwire.PathProc, a.ID), &got)
	require.Equal(t, "sleep 30", got.Command)
	require.WithinDuration(t, time.Now(), got.StartedAt, time.Minute)
	raw, err := json.Marshal(got)
	require.NoError(t, err)
	require.NotContains(t, string(raw), "ended_at", "a running proc has no end")
}

// resize asks to resize the proc's terminal to cols × rows.
func resize(t *testing.T, base, id, cols, rows string) *http.Response {
	t.Helper()
	return procDo(t, http.MethodPost, base, agentwire.PathProcResize, id, nil, agentwire.QueryCols, cols, agentwire.QueryRows, rows)
}

// TestSharedProcsOutliveAServer: procs of a set that Servers share (a
// daemon's, one Server per stream) survive one Server's KillAll and are
// seen through another; the set's own KillAll ends them.
func TestSharedProcsOutliveAServer(t *testing.T) {
	t.Parallel()
	procs := agent.NewProcs()
	a := agent.New(agent.Options{Procs: procs})
	baseA, baseB := serveProcs(t, a), serveProcs(t, agent.New(agent.Options{Procs: procs}))
	p := startProc(t, baseA, agentwire.ProcStart{Command: "echo up; sleep 30"})
	a.KillAll()
	var info agentwire.ProcInfo
	getJSON(t, baseB, procRoute(agentwire.PathProc, p.ID), &info)
	require.Equal(t, "running", info.State, "a Server's end leaves shared procs running")
	eventually(t, 5*time.Second, func() bool { return readOutput(t, baseB, p.ID).text("stdout") == "up\n" }, "output")
	procs.KillAll()
	require.Equal(t, 128+int(syscall.SIGKILL), waitProc(t, baseB, p.ID).ExitCode)
}
