package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/sandbox"
)

// openStream posts an exec:stream request and returns the answer; the
// caller reads and closes its body.
func (e *apiEnv) openStream(t *testing.T, ctx context.Context, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.srv.URL+"/v1/sessions/"+sid.String()+"/exec:stream", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+apiToken)
	resp, err := e.srv.Client().Do(req)
	require.NoError(t, err)
	return resp
}

func nextEvent(t *testing.T, br *bufio.Reader) ExecStreamEvent {
	t.Helper()
	line, err := br.ReadBytes('\n')
	require.NoError(t, err)
	var ev ExecStreamEvent
	require.NoError(t, json.Unmarshal(line, &ev), "%q", line)
	return ev
}

// TestExecStreamLive: each piece is on the wire before the command goes
// on (the command waits for the test to have read it), the streams are
// kept apart with their offsets, binary pieces travel exactly, and the
// last line is the result.
func TestExecStreamLive(t *testing.T) {
	t.Parallel()
	e := newAPI(t, APIOptions{Token: apiToken})
	read := make(chan struct{})
	e.svc.ExecRun = func(ctx context.Context, req sandbox.ExecRequest) (sandbox.ExecResult, error) {
		req.Output.Output(sandbox.Stdout, 0, []byte("one"))
		select {
		case <-read:
		case <-ctx.Done():
			return sandbox.ExecResult{}, ctx.Err()
		}
		req.Output.Output(sandbox.Stderr, 0, []byte("\xff\x00"))
		req.Output.Output(sandbox.Stdout, 3, []byte("two"))
		return sandbox.ExecResult{Stdout: "onetwo", Stderr: "\xff\x00", ExitCode: 5, Truncated: true}, nil
	}
	resp := e.openStream(t, context.Background(), `{"command":"c","timeout_ms":1500}`)
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "application/x-ndjson", resp.Header.Get("Content-Type"))
	br := bufio.NewReader(resp.Body)
	require.Equal(t, &ExecChunk{Stream: "stdout", Offset: 0, Text: "one"}, nextEvent(t, br).Output)
	close(read)
	errPiece := nextEvent(t, br).Output
	b, err := errPiece.Bytes()
	require.NoError(t, err)
	require.Equal(t, "stderr", errPiece.Stream)
	require.Equal(t, []byte("\xff\x00"), b)
	require.Equal(t, &ExecChunk{Stream: "stdout", Offset: 3, Text: "two"}, nextEvent(t, br).Output)
	require.Equal(t, &ExecStreamResult{ExitCode: 5, Truncated: true, StdoutBytes: 6, StderrBytes: 2}, nextEvent(t, br).Result)
	require.Equal(t, 1500*time.Millisecond, e.svc.ExecRequest().Timeout)
}

// TestExecStreamErrors: a failure before any output is a plain error
// answer with its status; one after output is the stream's last line.
func TestExecStreamErrors(t *testing.T) {
	t.Parallel()
	e := newAPI(t, APIOptions{Token: apiToken})
	a := e.do(t, http.MethodPost, "/v1/sessions/"+sid.String()+"/exec:stream", strings.NewReader(`{"command":"c","timeout_ms":-1}`), nil)
	require.Equal(t, http.StatusBadRequest, a.status)
	require.Equal(t, CodeInvalidArgument, a.code)

	e.svc.ExecRun = func(context.Context, sandbox.ExecRequest) (sandbox.ExecResult, error) {
		return sandbox.ExecResult{}, sandbox.ErrNotFound
	}
	a = e.do(t, http.MethodPost, "/v1/sessions/"+sid.String()+"/exec:stream", strings.NewReader(`{"command":"c"}`), nil)
	require.Equal(t, http.StatusNotFound, a.status)
	require.Equal(t, CodeNotFound, a.code)

	e.svc.ExecRun = func(_ context.Context, req sandbox.ExecRequest) (sandbox.ExecResult, error) {
		req.Output.Output(sandbox.Stdout, 0, []byte("x"))
		return sandbox.ExecResult{}, sandbox.ErrNotFound
	}
	resp := e.openStream(t, context.Background(), `{"command":"c"}`)
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	br := bufio.NewReader(resp.Body)
	require.NotNil(t, nextEvent(t, br).Output)
	require.Equal(t, CodeNotFound, nextEvent(t, br).Error.Code)
}

// TestExecStreamCommitsASilentCommand: a command silent past commitAfter
// has its 200 and headers before it ends, so a client's header timeout
// does not fire on `sleep`.
func TestExecStreamCommitsASilentCommand(t *testing.T) {
	t.Parallel()
	e := newAPI(t, APIOptions{Token: apiToken})
	release := make(chan struct{})
	e.svc.ExecRun = func(ctx context.Context, _ sandbox.ExecRequest) (sandbox.ExecResult, error) {
		select {
		case <-release:
			return sandbox.ExecResult{}, nil
		case <-ctx.Done():
			return sandbox.ExecResult{}, ctx.Err()
		}
	}
	start := time.Now()
	resp := e.openStream(t, context.Background(), `{"command":"sleep"}`)
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Less(t, time.Since(start), 5*time.Second)
	close(release)
	require.NotNil(t, nextEvent(t, bufio.NewReader(resp.Body)).Result)
}

// TestExecStreamSlowReaderCancels: a client that stops reading holds the
// command back (the sink blocks, nothing piles up here) and, once it has
// taken nothing for StreamStallTimeout, the exec is cancelled; a client
// that goes away cancels it too.
func TestExecStreamSlowReaderCancels(t *testing.T) {
	t.Parallel()
	e := newAPI(t, APIOptions{Token: apiToken, StreamStallTimeout: 300 * time.Millisecond})
	type outcome struct {
		sent int
		err  error
	}
	done := make(chan outcome, 1)
	e.svc.ExecRun = func(ctx context.Context, req sandbox.ExecRequest) (sandbox.ExecResult, error) {
		piece := []byte(strings.Repeat("x", 32<<10))
		sent := 0
		for ; sent < 4096 && ctx.Err() == nil; sent++ { // 128 MiB if nobody held it back
			req.Output.Output(sandbox.Stdout, int64(sent*len(piece)), piece)
		}
		done <- outcome{sent, ctx.Err()}
		return sandbox.ExecResult{}, ctx.Err()
	}
	resp := e.openStream(t, context.Background(), `{"command":"yes"}`)
	defer func() { _ = resp.Body.Close() }()
	select {
	case o := <-done:
		require.ErrorIs(t, o.err, context.Canceled)
		require.Less(t, o.sent, 1024, "a reader that takes nothing holds the command back")
	case <-time.After(20 * time.Second):
		require.FailNow(t, "the stalled stream was never cancelled")
	}

	ctx, cancel := context.WithCancel(context.Background())
	resp2 := e.openStream(t, ctx, `{"command":"yes"}`)
	_, err := bufio.NewReader(resp2.Body).ReadBytes('\n')
	require.NoError(t, err)
	cancel()
	_ = resp2.Body.Close()
	select {
	case o := <-done:
		require.ErrorIs(t, o.err, context.Canceled)
	case <-time.After(20 * time.Second):
		require.FailNow(t, "a gone client did not cancel the exec")
	}
}

// sinkLines records what the client's sink is handed.
type sinkLines []string

func (s *sinkLines) Output(stream sandbox.Stream, offset int64, data []byte) {
	*s = append(*s, fmt.Sprintf("%s@%d:%q", stream, offset, data))
}

// TestClientExecStream: the client hands each piece on as it arrives and
// assembles the result; an error line is the API error of its code.
func TestClientExecStream(t *testing.T) {
	t.Parallel()
	e := newAPI(t, APIOptions{Token: apiToken})
	e.svc.ExecRun = func(_ context.Context, req sandbox.ExecRequest) (sandbox.ExecResult, error) {
		req.Output.Output(sandbox.Stdout, 0, []byte("a\xff"))
		req.Output.Output(sandbox.Stderr, 0, []byte("e"))
		req.Output.Output(sandbox.Stdout, 2, []byte("b"))
		return sandbox.ExecResult{Stdout: "a\xffb", Stderr: "e", ExitCode: 2, TimedOut: true}, nil
	}
	var got sinkLines
	res, err := e.client.Exec(context.Background(), sid, sandbox.ExecRequest{Command: "c", Output: &got})
	require.NoError(t, err)
	require.Equal(t, sandbox.ExecResult{Stdout: "a\xffb", Stderr: "e", ExitCode: 2, TimedOut: true}, res)
	require.Equal(t, sinkLines{`stdout@0:"a\xff"`, `stderr@0:"e"`, `stdout@2:"b"`}, got)

	e.svc.ExecRun = func(_ context.Context, req sandbox.ExecRequest) (sandbox.ExecResult, error) {
		req.Output.Output(sandbox.Stdout, 0, []byte("x"))
		return sandbox.ExecResult{}, sandbox.ErrNotFound
	}
	_, err = e.client.Exec(context.Background(), sid, sandbox.ExecRequest{Command: "c", Output: &got})
	require.ErrorIs(t, err, sandbox.ErrNotFound)
	var apiErr *APIError
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusNotFound, apiErr.Status)
}

// TestClientExecStreamRefusesABrokenStream: a piece out of place, a result
// whose lengths disagree with the pieces, or no result at all is an error,
// never a result.
func TestClientExecStreamRefusesABrokenStream(t *testing.T) {
	t.Parallel()
	for name, body := range map[string]string{
		"gap":       `{"output":{"stream":"stdout","offset":1,"text":"x"}}` + "\n",
		"stream":    `{"output":{"stream":"stdin","offset":0,"text":"x"}}` + "\n",
		"lengths":   `{"output":{"stream":"stdout","offset":0,"text":"x"}}` + "\n" + `{"result":{"exit_code":0,"stdout_bytes":2,"stderr_bytes":0}}` + "\n",
		"no result": `{"output":{"stream":"stdout","offset":0,"text":"x"}}` + "\n",
		"garbage":   "<html>\n",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				_, _ = io.WriteString(w, body)
			}))
			defer srv.Close()
			c, err := NewClient(srv.URL, "", srv.Client())
			require.NoError(t, err)
			var got sinkLines
			_, err = c.Exec(context.Background(), sid, sandbox.ExecRequest{Command: "c", Output: &got})
			require.ErrorIs(t, err, errBadStream)
		})
	}
}

// TestClientExecStreamFallsBack: against an executor without exec:stream
// (404 "no such endpoint"), a streamed Exec is the plain exec, its output
// handed on at the end; an unknown session is not mistaken for it.
func TestClientExecStreamFallsBack(t *testing.T) {
	t.Parallel()
	e := newAPI(t, APIOptions{Token: apiToken})
	e.svc.ExecResult = sandbox.ExecResult{Stdout: "out", ExitCode: 1}
	old := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, ":stream") {
			writeError(w, http.StatusNotFound, CodeNotFound, msgNoSuchEndpoint)
			return
		}
		e.srv.Config.Handler.ServeHTTP(w, r)
	}))
	defer old.Close()
	c, err := NewClient(old.URL, apiToken, old.Client())
	require.NoError(t, err)
	var got sinkLines
	res, err := c.Exec(context.Background(), sid, sandbox.ExecRequest{Command: "c", Output: &got})
	require.NoError(t, err)
	require.Equal(t, sandbox.ExecResult{Stdout: "out", ExitCode: 1}, res)
	require.Equal(t, sinkLines{`stdout@0:"out"`}, got)

	e.svc.Err = sandbox.ErrNotFound
	_, err = e.client.Exec(context.Background(), sid, sandbox.ExecRequest{Command: "c", Output: &got})
	require.ErrorIs(t, err, sandbox.ErrNotFound)
	require.Len(t, e.svc.Calls(), 2, "the fallback's exec, then the stream's: an unknown session is not retried as a plain exec")
}

// TestStreamsCappedPerSession: long-lived streams into one session (here
// streamed execs, a followed output, an attach) share MaxStreams; one more
// is 429 too_many_streams before anything runs, another session is not
// affected, and a stream that ends gives its slot back.
func TestStreamsCappedPerSession(t *testing.T) {
	t.Parallel()
	e := newAPI(t, APIOptions{Token: apiToken, MaxStreams: 2})
	e.svc.ExecRun = func(ctx context.Context, _ sandbox.ExecRequest) (sandbox.ExecResult, error) {
		<-ctx.Done()
		return sandbox.ExecResult{}, ctx.Err()
	}
	ctx, cancel := context.WithCancel(context.Background())
	first := e.openStream(t, ctx, `{"command":"sleep"}`)
	second := e.openStream(t, context.Background(), `{"command":"sleep"}`)
	defer func() { _ = second.Body.Close() }()
	require.Equal(t, http.StatusOK, first.StatusCode)
	require.Equal(t, http.StatusOK, second.StatusCode)

	p, err := e.client.Procs(sid).StartProc(context.Background(), sandbox.ProcStart{Command: "cat"})
	require.NoError(t, err)
	for _, path := range []string{"/exec:stream", "/procs/" + p.ID + "/output?follow=true", "/procs/" + p.ID + "/attach"} {
		method := http.MethodGet
		if path == "/exec:stream" {
			method = http.MethodPost
		}
		a := e.do(t, method, "/v1/sessions/"+sid.String()+path, strings.NewReader(`{"command":"x"}`), nil)
		require.Equal(t, http.StatusTooManyRequests, a.status, path)
		require.Equal(t, CodeTooManyStreams, a.code, path)
	}
	a := e.do(t, http.MethodGet, "/v1/sessions/"+sid.String()+"/procs/"+p.ID+"/output", nil, nil)
	require.Equal(t, http.StatusOK, a.status, "a read that does not follow is not a stream")
	other, stop := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(other, http.MethodPost, e.srv.URL+"/v1/sessions/ses_other/exec:stream", strings.NewReader(`{"command":"x"}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+apiToken)
	resp, err := e.srv.Client().Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "another session has its own slots")
	stop()
	_ = resp.Body.Close()

	cancel()
	_ = first.Body.Close()
	require.Eventually(t, func() bool {
		resp := e.openStream(t, context.Background(), `{"command":"sleep"}`)
		defer func() { _ = resp.Body.Close() }()
		return resp.StatusCode == http.StatusOK
	}, 10*time.Second, 20*time.Millisecond, "the slot came back")
}
