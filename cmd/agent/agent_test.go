package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/yamux"
	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/agentwire"
	"github.com/sandgate/sandgate/internal/proctest"
)

// agentProc is a running agent binary and an HTTP client that reaches it
// over a yamux client session on its stdin and stdout, as a provider does.
type agentProc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	sess   *yamux.Session
	client *http.Client
	exited chan error
}

// startAgent runs `sandgate-agent serve` in a group of its own, as cred's
// user when cred is not nil.
func startAgent(t testing.TB, cred *syscall.Credential) *agentProc {
	t.Helper()
	return launchAgent(t, cred, "serve", nil, "")
}

// launchAgent runs `sandgate-agent verb` in a group of its own with env
// added to the test's, writes first (when not empty) to its stdin and
// speaks yamux after it, as a provider does.
func launchAgent(t testing.TB, cred *syscall.Credential, verb string, env []string, first string) *agentProc {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "sandgate-agent"), verb)
	cmd.Dir = binDir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: cred}
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	if first != "" {
		_, err := io.WriteString(stdin, first)
		require.NoError(t, err)
	}
	a := &agentProc{cmd: cmd, stdin: stdin, exited: make(chan error, 1)}
	go func() { a.exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		if err := <-a.exited; err != nil {
			t.Logf("agent: %v", err) // killed here, or exited as the test meant
		}
	})
	sess, err := yamux.Client(pipeConn{stdout, stdin}, yamux.DefaultConfig())
	require.NoError(t, err)
	a.sess = sess
	tr := &http.Transport{DialContext: func(context.Context, string, string) (net.Conn, error) { return sess.Open() }}
	a.client = &http.Client{Transport: tr}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		_ = sess.Close()
	})
	return a
}

// pipeConn is the agent's stdout and stdin as the client's connection.
type pipeConn struct {
	io.ReadCloser
	w io.WriteCloser
}

func (c pipeConn) Write(p []byte) (int, error) { return c.w.Write(p) }
func (c pipeConn) Close() error                { return errors.Join(c.ReadCloser.Close(), c.w.Close()) }

// do sends one request to the agent.
func (a *agentProc) do(t testing.TB, ctx context.Context, method, route string, q url.Values, body io.Reader) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, "http://agent"+route+"?"+q.Encode(), body)
	require.NoError(t, err)
	resp, err := a.client.Do(req)
	require.NoError(t, err)
	return resp
}

// exec posts a command and returns the open event stream.
func (a *agentProc) exec(t testing.TB, ctx context.Context, req agentwire.ExecRequest) *json.Decoder {
	t.Helper()
	body, err := json.Marshal(req)
	require.NoError(t, err)
	resp := a.do(t, ctx, http.MethodPost, agentwire.PathExec, nil, bytes.NewReader(body))
	t.Cleanup(func() { _ = resp.Body.Close() })
	require.Equal(t, http.StatusOK, resp.StatusCode)
	return json.NewDecoder(bufio.NewReader(resp.Body))
}

// sleeper runs a command that waits on a background sleep and returns the
// sleep's pid, running.
func (a *agentProc) sleeper(t testing.TB, ctx context.Context) int {
	t.Helper()
	dec := a.exec(t, ctx, agentwire.ExecRequest{Command: `sleep 30 & echo $!; wait`})
	var ev agentwire.ExecEvent
	require.NoError(t, dec.Decode(&ev))
	require.NotZero(t, ev.Pid, "the pid comes first")
	require.NoError(t, dec.Decode(&ev))
	child, err := strconv.Atoi(strings.TrimSpace(string(ev.Stdout)))
	require.NoError(t, err)
	require.True(t, proctest.Alive(child))
	return child
}

// collect reads events to the exit: stdout, stderr, the exit.
func collect(t testing.TB, dec *json.Decoder) (pid int, stdout, stderr string, exit agentwire.ExecExit) {
	t.Helper()
	for {
		var ev agentwire.ExecEvent
		require.NoError(t, dec.Decode(&ev))
		switch {
		case ev.Pid != 0:
			pid = ev.Pid
		case ev.Exit != nil:
			return pid, stdout, stderr, *ev.Exit
		default:
			stdout += string(ev.Stdout)
			stderr += string(ev.Stderr)
		}
	}
}

func pathQ(p string) url.Values { return url.Values{agentwire.QueryPath: {p}} }

func TestServeOverYamux(t *testing.T) {
	t.Parallel()
	a := startAgent(t, nil)
	ctx := context.Background()

	resp := a.do(t, ctx, http.MethodGet, agentwire.PathVersion, nil, nil)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, agentwire.Version, string(b))

	pid, stdout, stderr, exit := collect(t, a.exec(t, ctx, agentwire.ExecRequest{
		Command: `printf 'o\xff'; printf 'e' >&2; exit 7`, DeadlineSeconds: 10,
	}))
	require.NotZero(t, pid)
	require.Equal(t, "o\xff", stdout)
	require.Equal(t, "e", stderr)
	require.Equal(t, 7, exit.Code)
	require.False(t, exit.Killed)

	// The agent handles SIGPIPE itself; its commands get the default back.
	_, stdout, _, exit = collect(t, a.exec(t, ctx, agentwire.ExecRequest{
		Command: `yes | head -n 1; echo "${PIPESTATUS[0]}"`, DeadlineSeconds: 10,
	}))
	require.Equal(t, "y\n141\n", stdout, "yes dies of SIGPIPE")
	require.False(t, exit.Killed)

	p := filepath.Join(t.TempDir(), "sub", "f")
	resp = a.do(t, ctx, http.MethodPut, agentwire.PathFile, pathQ(p), strings.NewReader("over yamux"))
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	resp = a.do(t, ctx, http.MethodGet, agentwire.PathFile, pathQ(p), nil)
	b, err = io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, "over yamux", string(b))

	// Several calls at once, each on its own stream.
	decs := make([]*json.Decoder, 8)
	start := time.Now()
	for i := range decs {
		decs[i] = a.exec(t, ctx, agentwire.ExecRequest{Command: "sleep 0.5; echo " + strconv.Itoa(i)})
	}
	for i, dec := range decs {
		_, out, _, _ := collect(t, dec)
		require.Equal(t, strconv.Itoa(i)+"\n", out)
	}
	require.Less(t, time.Since(start), 2*time.Second, "calls run side by side")
}

func TestStdinEOFKillsCommandsAndExits(t *testing.T) {
	t.Parallel()
	a := startAgent(t, nil)
	child := a.sleeper(t, context.Background())

	require.NoError(t, a.stdin.Close())
	select {
	case err := <-a.exited:
		a.exited <- err // for the cleanup
		require.NoError(t, err, "the agent exits 0 when its stdin ends")
	case <-time.After(5 * time.Second):
		t.Fatal("the agent did not exit when its stdin ended")
	}
	require.Eventually(t, func() bool { return !proctest.Alive(child) }, 3*time.Second, 10*time.Millisecond,
		"the running command's group was not killed")
}

// nobody is the unprivileged user the non-root tests run the agent as.
var nobody = &syscall.Credential{Uid: 65534, Gid: 65534}

// TestNonDumpable runs the agent as an unprivileged user: the kernel gives
// a non-dumpable process's /proc files to root, where a dumpable one's
// belong to its own user — what closes them to the sandbox's processes. A
// command the agent runs is dumpable again (execve resets the flag), the
// control that the check can fail.
func TestNonDumpable(t *testing.T) {
	t.Parallel()
	a := startAgent(t, nobody)
	pid, stdout, _, exit := collect(t, a.exec(t, context.Background(), agentwire.ExecRequest{
		Command: `stat -c %u /proc/$$/status`,
	}))
	require.Equal(t, 0, exit.Code)
	require.NotZero(t, pid)
	require.Equal(t, "65534\n", stdout, "a command the agent runs is dumpable: its /proc is its user's")
	require.Equal(t, uint32(0), ownerOf(t, "/proc/"+strconv.Itoa(a.cmd.Process.Pid)+"/status"),
		"the agent's /proc belongs to root: it is not dumpable")
}

func ownerOf(t *testing.T, p string) uint32 {
	t.Helper()
	fi, err := os.Stat(p)
	require.NoError(t, err)
	return fi.Sys().(*syscall.Stat_t).Uid
}

// TestNonRootFaults: what only an unprivileged agent meets, with the
// kernel's reason.
func TestNonRootFaults(t *testing.T) {
	t.Parallel()
	dir, err := os.MkdirTemp(binDir, "faults-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(dir, 0o755))
	secret := filepath.Join(dir, "secret")
	require.NoError(t, os.WriteFile(secret, []byte("root's"), 0o600))
	a := startAgent(t, nobody)
	ctx := context.Background()

	resp := a.do(t, ctx, http.MethodGet, agentwire.PathFile, pathQ(secret), nil)
	doc := wireError(t, resp, http.StatusForbidden)
	require.Equal(t, agentwire.CodeNotReadable, doc.Code)
	require.Equal(t, "Permission denied", doc.Reason)

	for _, p := range []string{dir + "/x", dir + "/new/x"} {
		resp = a.do(t, ctx, http.MethodPut, agentwire.PathFile, pathQ(p), strings.NewReader("x"))
		doc = wireError(t, resp, http.StatusForbidden)
		require.Equal(t, agentwire.CodeNotWritable, doc.Code)
		require.Equal(t, "Permission denied", doc.Reason)
		require.Equal(t, p, doc.Path)
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "nothing created")
}

func wireError(t *testing.T, resp *http.Response, status int) agentwire.Error {
	t.Helper()
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, status, resp.StatusCode)
	var doc agentwire.Error
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&doc))
	return doc
}

// TestCallerGoneKillsGroup: the caller's departure travels as the yamux
// stream's close, which ends the request's context in the agent.
func TestCallerGoneKillsGroup(t *testing.T) {
	t.Parallel()
	a := startAgent(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	child := a.sleeper(t, ctx)
	cancel()
	require.Eventually(t, func() bool { return !proctest.Alive(child) }, 3*time.Second, 10*time.Millisecond,
		"the caller left; the command's group must die")
	// The session serves on.
	_, out, _, _ := collect(t, a.exec(t, context.Background(), agentwire.ExecRequest{Command: "echo still"}))
	require.Equal(t, "still\n", out)
}

// TestLargeFileRoundTrip streams 64 MiB each way over one session: the
// write is checked byte for byte by its digest, with bounded memory on both
// sides.
func TestLargeFileRoundTrip(t *testing.T) {
	t.Parallel()
	a := startAgent(t, nil)
	ctx := context.Background()
	const size = 64 << 20
	p := filepath.Join(t.TempDir(), "huge")
	src := io.LimitReader(rand.NewChaCha8([32]byte{1}), size)
	want := sha256.New()
	start := time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, "http://agent"+agentwire.PathFile+"?"+pathQ(p).Encode(),
		io.TeeReader(src, want))
	require.NoError(t, err)
	req.ContentLength = size
	resp, err := a.client.Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	written := time.Since(start)

	start = time.Now()
	q := pathQ(p)
	q.Set(agentwire.QueryMax, strconv.Itoa(size))
	resp = a.do(t, ctx, http.MethodGet, agentwire.PathFile, q, nil)
	require.Equal(t, int64(size), resp.ContentLength)
	got := sha256.New()
	n, err := io.Copy(got, resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, int64(size), n)
	require.Equal(t, want.Sum(nil), got.Sum(nil))
	t.Logf("64 MiB over yamux: write %v, read %v", written, time.Since(start))
}
