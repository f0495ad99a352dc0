package agent_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/app/agent"
	"github.com/sandgate/sandgate/core/agentwire"
	"github.com/sandgate/sandgate/internal/proctest"
)

// newServer serves a fresh agent on a loopback listener: a real HTTP
// server, so streaming and the caller's departure behave as over yamux.
func newServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(agent.New(agent.Options{}))
	t.Cleanup(srv.Close)
	return srv
}

// execResult is a PathExec answer, decoded.
type execResult struct {
	pid            int
	stdout, stderr []byte
	exit           *agentwire.ExecExit
	// order is "o", "e" per output event, in arrival order.
	order string
}

// runExec posts req and reads the whole answer.
func runExec(t *testing.T, base string, req agentwire.ExecRequest) execResult {
	t.Helper()
	resp := postExec(t, context.Background(), base, req)
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	return readEvents(t, resp.Body, nil)
}

// postExec starts an exec and returns the open answer.
func postExec(t *testing.T, ctx context.Context, base string, req agentwire.ExecRequest) *http.Response {
	t.Helper()
	body, err := json.Marshal(req)
	require.NoError(t, err)
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, base+agentwire.PathExec, bytes.NewReader(body))
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(hr)
	require.NoError(t, err)
	return resp
}

// readEvents decodes events until EOF; each output event is also handed to
// seen (when not nil).
func readEvents(t *testing.T, r io.Reader, seen func(agentwire.ExecEvent)) execResult {
	t.Helper()
	var res execResult
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 16<<20)
	first := true
	for sc.Scan() {
		var ev agentwire.ExecEvent
		require.NoError(t, json.Unmarshal(sc.Bytes(), &ev))
		require.Nil(t, res.exit, "an event after the exit")
		switch {
		case ev.Pid != 0:
			require.True(t, first, "the pid comes first")
			res.pid = ev.Pid
		case ev.Exit != nil:
			res.exit = ev.Exit
		case ev.Stdout != nil:
			res.stdout = append(res.stdout, ev.Stdout...)
			res.order += "o"
		case ev.Stderr != nil:
			res.stderr = append(res.stderr, ev.Stderr...)
			res.order += "e"
		default:
			t.Fatalf("an empty event: %s", sc.Text())
		}
		first = false
		if seen != nil {
			seen(ev)
		}
	}
	return res
}

// gone reports whether pid runs no more.
func gone(pid int) bool { return !proctest.Alive(pid) }

// killGroupAtCleanup SIGKILLs process group pgid when the test ends, so a
// straggler a test left on purpose does not outlive it.
func killGroupAtCleanup(t *testing.T, pgid int) {
	t.Helper()
	t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
}

// eventually waits up to d for cond.
func eventually(t *testing.T, d time.Duration, cond func() bool, msg string) {
	t.Helper()
	require.Eventually(t, cond, d, 10*time.Millisecond, msg)
}

func newDecoder(r io.Reader) *json.Decoder { return json.NewDecoder(r) }

// decodeError reads an Error document answer and closes it.
func decodeError(t *testing.T, resp *http.Response) agentwire.Error {
	t.Helper()
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	var doc agentwire.Error
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&doc))
	return doc
}
