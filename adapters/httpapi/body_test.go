package httpapi

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rawConn opens a connection to e's server and sends head (the request
// line and headers, the API token added) and then body, and no more.
func (e *apiEnv) rawConn(t *testing.T, head string, body []byte) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", e.srv.Listener.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	_, err = fmt.Fprintf(conn, "%s\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", head, apiToken)
	require.NoError(t, err)
	_, err = conn.Write(body)
	require.NoError(t, err)
	return conn
}

// readAnswer reads the one response on conn, failing after limit.
func readAnswer(t *testing.T, conn net.Conn, limit time.Duration) answer {
	t.Helper()
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(limit)))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err, "no answer within %s", limit)
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	a := answer{status: resp.StatusCode, header: resp.Header, body: raw}
	a.code, a.msg = decodeErrorBody(raw)
	return a
}

// decodeErrorBody returns the code and message of an error body.
func decodeErrorBody(raw []byte) (string, string) {
	err := decodeError(&http.Response{Body: io.NopCloser(strings.NewReader(string(raw))), Status: "?"})
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Code, ae.Message
	}
	return "", ""
}

// TestBodyStallTimesOut: a body that stops sending is answered 408 after
// the idle timeout, for a stream write, a batch and a JSON body alike
// (issue 11 item 3: they held their goroutine forever).
func TestBodyStallTimesOut(t *testing.T) {
	t.Parallel()
	e := newAPI(t, APIOptions{Token: apiToken, Bodies: NewBodyGuard(8, 300*time.Millisecond)})
	for _, head := range []string{
		"PUT /v1/sessions/ses_test/files?path=/w/x HTTP/1.1\r\nContent-Length: 100",
		"POST /v1/sessions/ses_test/files:batch HTTP/1.1\r\nContent-Length: 100000",
		"POST /v1/sessions/ses_test/exec HTTP/1.1\r\nContent-Length: 100",
		"PUT /v1/sessions/ses_test HTTP/1.1\r\nTransfer-Encoding: chunked",
	} {
		start := time.Now()
		conn := e.rawConn(t, head, []byte("a"))
		a := readAnswer(t, conn, 5*time.Second)
		require.Equal(t, http.StatusRequestTimeout, a.status, head)
		require.Equal(t, CodeRequestTimeout, a.code, head)
		require.Less(t, time.Since(start), 3*time.Second, head)
	}
}

// TestSlowBodyIsNotCut: the timeout is an idle one; an upload that keeps
// sending, slower than the timeout in all, completes.
func TestSlowBodyIsNotCut(t *testing.T) {
	t.Parallel()
	e := newAPI(t, APIOptions{Token: apiToken, Bodies: NewBodyGuard(8, 300*time.Millisecond)})
	conn := e.rawConn(t, "PUT /v1/sessions/ses_test/files?path=/w/slow HTTP/1.1\r\nContent-Length: 10", nil)
	for range 10 {
		time.Sleep(100 * time.Millisecond) // 1 s in all, every gap under the timeout
		_, err := conn.Write([]byte("x"))
		require.NoError(t, err)
	}
	a := readAnswer(t, conn, 5*time.Second)
	require.Equal(t, http.StatusNoContent, a.status, a.msg)
	e.logs()
	require.Equal(t, "xxxxxxxxxx", string(e.svc.File(sid, "/w/slow")))
}

// TestBodyShorterThanContentLength: a body that ends early is 400
// "incomplete_body", whatever the service made of the short read it was
// handed (the Docker provider's copy error was a 500 "internal").
func TestBodyShorterThanContentLength(t *testing.T) {
	t.Parallel()
	e := newAPI(t, APIOptions{Token: apiToken})
	e.svc.Sink = func(src io.Reader, _ int64) error {
		_, err := io.Copy(io.Discard, src)
		return fmt.Errorf("docker: stdin copy: %s", fmt.Sprint(err)) // the chain lost, as an SDK does
	}
	for _, head := range []string{
		"PUT /v1/sessions/ses_test/files?path=/w/x HTTP/1.1\r\nContent-Length: 100",
		"POST /v1/sessions/ses_test/exec HTTP/1.1\r\nContent-Length: 100",
		"POST /v1/sessions/ses_test/files:batch HTTP/1.1\r\nContent-Length: 100000",
	} {
		conn := e.rawConn(t, head, []byte(`{"command":"x"}`))
		require.NoError(t, conn.(*net.TCPConn).CloseWrite())
		a := readAnswer(t, conn, 5*time.Second)
		require.Equal(t, http.StatusBadRequest, a.status, head)
		require.Equal(t, CodeIncompleteBody, a.code, head)
	}
}

// TestBodyCap: bodies beyond the cap are answered 503 "busy" with
// Retry-After at once; a slot comes back when its body ends.
func TestBodyCap(t *testing.T) {
	t.Parallel()
	e := newAPI(t, APIOptions{Token: apiToken, Bodies: NewBodyGuard(2, 10*time.Second)})
	head := "PUT /v1/sessions/ses_test/files?path=/w/x HTTP/1.1\r\nContent-Length: 2"
	c1 := e.rawConn(t, head, []byte("a"))
	c2 := e.rawConn(t, head, []byte("a"))
	var a answer
	require.Eventually(t, func() bool {
		a = readAnswer(t, e.rawConn(t, head, []byte("ab")), 5*time.Second)
		return a.status != http.StatusNoContent // until both stalled bodies hold their slots
	}, 30*time.Second, 20*time.Millisecond) // generous: each try may wait on a loaded machine
	require.Equal(t, http.StatusServiceUnavailable, a.status)
	require.Equal(t, CodeBusy, a.code)
	require.Equal(t, "1", a.header.Get("Retry-After"))
	// A request without a body needs no slot.
	require.Equal(t, http.StatusOK, e.do(t, http.MethodGet, "/v1/sessions/ses_test", nil, nil).status)

	_, err := c1.Write([]byte("b"))
	require.NoError(t, err)
	require.Equal(t, http.StatusNoContent, readAnswer(t, c1, 5*time.Second).status)
	require.Eventually(t, func() bool {
		return readAnswer(t, e.rawConn(t, head, []byte("ab")), 5*time.Second).status == http.StatusNoContent
	}, 5*time.Second, 20*time.Millisecond)
	_ = c2.Close()
}

// TestGuardedBodyClearsItsDeadline: once the body is read, a long call (an
// exec) is not cut by the idle deadline left on the connection.
func TestGuardedBodyClearsItsDeadline(t *testing.T) {
	t.Parallel()
	g := NewBodyGuard(1, 100*time.Millisecond)
	srv := newGuardedServer(t, g, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		select {
		case <-r.Context().Done():
			w.WriteHeader(http.StatusGone)
		case <-time.After(500 * time.Millisecond):
			w.WriteHeader(http.StatusOK)
		}
	})
	resp, err := http.Post(srv, "text/plain", strings.NewReader("body"))
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
}

// newGuardedServer serves h under g on a test server and returns its URL.
func newGuardedServer(t *testing.T, g *BodyGuard, h http.HandlerFunc) string {
	t.Helper()
	srv := httptest.NewServer(g.Wrap(h))
	t.Cleanup(srv.Close)
	return srv.URL
}
