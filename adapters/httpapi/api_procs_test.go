package httpapi

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/core/session"
)

// TestProcsOverTheAPI drives every proc route through the Go client, over
// the fake's procs (a proc echoes its stdin after its command): the
// answers and the sentinels cross the wire.
func TestProcsOverTheAPI(t *testing.T) {
	t.Parallel()
	e := newAPI(t, APIOptions{Token: apiToken})
	ctx := context.Background()
	procs := e.client.Procs(sid)
	p, err := procs.StartProc(ctx, sandbox.ProcStart{Command: "cat", Tag: "t1"})
	require.NoError(t, err)
	require.Equal(t, sandbox.ProcRunning, p.State)
	require.Equal(t, "t1", p.Tag)
	list, err := procs.Procs(ctx)
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.NoError(t, procs.ProcStdin(ctx, p.ID, strings.NewReader("hi\n"), true))

	var got strings.Builder
	end, err := procs.ProcOutput(ctx, p.ID, sandbox.ProcOutputQuery{From: 2, Follow: true}, func(c sandbox.ProcChunk) error {
		require.Equal(t, int64(2+got.Len()), c.Offset)
		got.Write(c.Data)
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, "t\nhi\n", got.String())
	require.Equal(t, sandbox.ProcExited, end.State)
	waited, err := procs.WaitProc(ctx, p.ID)
	require.NoError(t, err)
	require.Equal(t, 0, waited.ExitCode)
	require.False(t, waited.EndedAt.IsZero())

	require.ErrorIs(t, procs.SignalProc(ctx, p.ID, "TERM"), sandbox.ErrProcExited)
	require.ErrorIs(t, procs.ProcStdin(ctx, p.ID, strings.NewReader("x"), false), sandbox.ErrStdinClosed)
	require.ErrorIs(t, procs.ResizeProc(ctx, p.ID, 80, 24), session.ErrInvalidRequest, "not a PTY")
	require.ErrorIs(t, procs.SignalProc(ctx, p.ID, "BOGUS"), session.ErrInvalidRequest)
	require.NoError(t, procs.RemoveProc(ctx, p.ID))
	_, err = procs.Proc(ctx, p.ID)
	require.ErrorIs(t, err, sandbox.ErrProcNotFound)
	_, err = procs.Proc(ctx, "Bad-ID")
	require.ErrorIs(t, err, session.ErrInvalidRequest)

	a := e.do(t, http.MethodGet, "/v1/sessions/"+sid.String()+"/procs/p9/output?from=-1", nil, nil)
	require.Equal(t, http.StatusBadRequest, a.status)
	a = e.do(t, http.MethodPost, "/v1/sessions/"+sid.String()+"/procs/p9/resize?cols=x&rows=1", nil, nil)
	require.Equal(t, http.StatusBadRequest, a.status)
	e.svc.Err = sandbox.ErrNoAgent
	_, err = procs.Procs(ctx)
	require.ErrorIs(t, err, sandbox.ErrNoAgent)
	var apiErr *APIError
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusNotImplemented, apiErr.Status)
}

// TestAttachProc: over the WebSocket, stdin reaches the proc and its echo
// comes back, a resize reaches its terminal, closing stdin ends it, and the
// last message is the proc as it ended; an unknown proc is a plain 404.
func TestAttachProc(t *testing.T) {
	t.Parallel()
	e := newAPI(t, APIOptions{Token: apiToken})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p, err := e.client.Procs(sid).StartProc(ctx, sandbox.ProcStart{Command: "bash", TTY: true})
	require.NoError(t, err)
	att, err := e.client.AttachProc(ctx, sid, p.ID, 0)
	require.NoError(t, err)
	defer func() { _ = att.Close() }()
	_, err = att.Write([]byte("tty\n"))
	require.NoError(t, err)
	require.NoError(t, att.Resize(120, 40))
	var out strings.Builder
	end, err := att.Output(func(stream string, data []byte) error {
		require.Equal(t, sandbox.StreamStdout, stream)
		out.Write(data)
		if strings.Contains(out.String(), "tty\n") {
			require.NoError(t, att.CloseStdin())
		}
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, "bash\ntty\n", out.String())
	require.Equal(t, sandbox.ProcExited, end.State)
	cols, rows := e.svc.SessionProcs(sid).Size(p.ID)
	require.Equal(t, [2]int{120, 40}, [2]int{cols, rows})

	_, err = e.client.AttachProc(ctx, sid, "p99", 0)
	require.ErrorIs(t, err, sandbox.ErrProcNotFound)

	// A page of another origin cannot open it, even with the token (a
	// browser sends its Origin).
	u := strings.Replace(e.srv.URL, "http", "ws", 1) + "/v1/sessions/" + sid.String() + "/procs/" + p.ID + "/attach"
	_, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: http.Header{
		"Authorization": {"Bearer " + apiToken}, "Origin": {"https://evil.example"}}})
	require.Error(t, err)
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
}
