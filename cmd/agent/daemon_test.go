package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/agentwire"
	"github.com/sandgate/sandgate/internal/proctest"
)

// daemonWorld is a directory for one daemon and the environment that
// points relays at it; its cleanup waits for the daemon's idle exit.
type daemonWorld struct {
	dir string
	env []string
}

func newDaemonWorld(t *testing.T) daemonWorld {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "d")
	w := daemonWorld{dir: dir, env: []string{envDaemonDir + "=" + dir, envDaemonIdle + "=300ms"}}
	t.Cleanup(func() { w.waitGone(t) })
	return w
}

// waitGone waits for the daemon (found by its socket's peer pid) to exit.
func (w daemonWorld) waitGone(t *testing.T) {
	pid := w.daemonPID()
	if pid == 0 {
		return
	}
	if !waitFor(func() bool { return !proctest.Alive(pid) }, 10*time.Second) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("the daemon (pid %d) did not exit when idle", pid)
	}
}

func (w daemonWorld) daemonPID() int {
	c, err := net.Dial("unix", filepath.Join(w.dir, "daemon.sock"))
	if err != nil {
		return 0
	}
	defer func() { _ = c.Close() }()
	raw, err := c.(*net.UnixConn).SyscallConn()
	if err != nil {
		return 0
	}
	pid := 0
	_ = raw.Control(func(fd uintptr) {
		if cred, err := syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED); err == nil {
			pid = int(cred.Pid)
		}
	})
	return pid
}

func (w daemonWorld) relay(t *testing.T, token string) *agentProc {
	t.Helper()
	return launchAgent(t, nil, "relay", w.env, token+"\n")
}

func waitFor(f func() bool, d time.Duration) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if f() {
			return true
		}
	}
	return f()
}

// endStream ends a relay's stream as an executor that goes away does, and
// waits for the relay to exit.
func endStream(t *testing.T, a *agentProc) {
	t.Helper()
	require.NoError(t, a.stdin.Close())
	select {
	case err := <-a.exited:
		a.exited <- err
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("the relay did not exit when its stdin ended")
	}
}

func (a *agentProc) startProc(t *testing.T, command string) agentwire.ProcInfo {
	t.Helper()
	body, err := json.Marshal(agentwire.ProcStart{Command: command})
	require.NoError(t, err)
	resp := a.do(t, context.Background(), http.MethodPost, agentwire.PathProcs, nil, bytes.NewReader(body))
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	var info agentwire.ProcInfo
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&info))
	return info
}

func (a *agentProc) procs(t *testing.T) []agentwire.ProcInfo {
	t.Helper()
	resp := a.do(t, context.Background(), http.MethodGet, agentwire.PathProcs, nil, nil)
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var list []agentwire.ProcInfo
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&list))
	return list
}

// output reads a proc's stdout from offset as it is now.
func (a *agentProc) output(t *testing.T, id string, from int) string {
	t.Helper()
	q := url.Values{agentwire.QueryStream: {"stdout"}, agentwire.QueryFrom: {strconv.Itoa(from)}}
	resp := a.do(t, context.Background(), http.MethodGet, agentwire.ProcPath(agentwire.PathProcOutput, id), q, nil)
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var out strings.Builder
	dec := json.NewDecoder(resp.Body)
	for {
		var c agentwire.ProcChunk
		require.NoError(t, dec.Decode(&c))
		if c.EOF {
			return out.String()
		}
		out.Write(c.Data)
	}
}

func (a *agentProc) removeProc(t *testing.T, id string) {
	t.Helper()
	resp := a.do(t, context.Background(), http.MethodDelete, agentwire.ProcPath(agentwire.PathProc, id), nil, nil)
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
}

// TestProcOutlivesItsStream is an executor restart as the sandbox sees it:
// a proc started over one relay is still running, with its output from an
// offset, over the next; the first relay's end killed its exec, not the
// proc; a relay with another token cannot reach the daemon and serves
// its stream alone.
func TestProcOutlivesItsStream(t *testing.T) {
	t.Parallel()
	w := newDaemonWorld(t)
	token := agentwire.Token([]byte("key"), "sandbox")

	first := w.relay(t, token)
	info := first.startProc(t, `echo one; echo two; exec sleep 30`)
	execChild := first.sleeper(t, context.Background())
	require.True(t, waitFor(func() bool { return first.output(t, info.ID, 0) == "one\ntwo\n" }, 5*time.Second))
	endStream(t, first)
	require.True(t, waitFor(func() bool { return !proctest.Alive(execChild) }, 5*time.Second),
		"the ended stream's exec was not killed")

	second := w.relay(t, token)
	list := second.procs(t)
	require.Len(t, list, 1)
	require.Equal(t, info.ID, list[0].ID)
	require.Equal(t, "running", list[0].State)
	require.True(t, proctest.Alive(info.Pid))
	require.Equal(t, "two\n", second.output(t, info.ID, len("one\n")))

	stranger := w.relay(t, agentwire.Token([]byte("other key"), "sandbox"))
	require.Empty(t, stranger.procs(t), "another token must not reach the daemon")
	endStream(t, stranger)

	second.removeProc(t, info.ID)
	require.False(t, proctest.Alive(info.Pid))
	endStream(t, second)
}

// TestRelayRefusesBadSetup: a bad token line ends the relay with an error;
// a daemon directory that is not the user's 0700 one is not used (the
// stream is served alone).
func TestRelayRefusesBadSetup(t *testing.T) {
	t.Parallel()
	for _, line := range []string{"\n", "NOT-HEX\n", strings.Repeat("a", agentwire.MaxTokenLine+1) + "\n"} {
		a := launchAgent(t, nil, "relay", newDaemonWorld(t).env, line)
		select {
		case err := <-a.exited:
			a.exited <- err
			require.Error(t, err, "token line %q", line)
		case <-time.After(5 * time.Second):
			t.Fatalf("the relay did not refuse token line %q", line)
		}
	}
	w := newDaemonWorld(t)
	require.NoError(t, os.Mkdir(w.dir, 0o755))
	a := w.relay(t, agentwire.Token([]byte("key"), "sandbox"))
	info := a.startProc(t, "exec sleep 30")
	require.Len(t, a.procs(t), 1)
	require.Zero(t, w.daemonPID(), "no daemon in a directory open to others")
	endStream(t, a)
	require.True(t, waitFor(func() bool { return !proctest.Alive(info.Pid) }, 5*time.Second),
		"a stream served alone takes its procs with it")
}

// TestKilledRelayLeavesItsExecs: a relay that dies without closing (a
// command killed it) leaves its stream's commands running, as a killed
// `serve` agent did: the executor follows them from outside and kills them
// at their deadline through the engine.
func TestKilledRelayLeavesItsExecs(t *testing.T) {
	t.Parallel()
	w := newDaemonWorld(t)
	a := w.relay(t, agentwire.Token([]byte("key"), "sandbox"))
	child := a.sleeper(t, context.Background())
	pgid, err := syscall.Getpgid(child)
	require.NoError(t, err)
	t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
	require.NoError(t, a.cmd.Process.Signal(syscall.SIGKILL))
	a.exited <- <-a.exited // the cleanup's; killed, it is an error
	time.Sleep(500 * time.Millisecond)
	require.True(t, proctest.Alive(child), "the daemon killed the commands of a relay that died")
	require.NoError(t, syscall.Kill(-pgid, syscall.SIGKILL))
	require.True(t, waitFor(func() bool { return !proctest.Alive(child) }, 5*time.Second))
}
