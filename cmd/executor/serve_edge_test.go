package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/ports/portfake"
)

// stalledRequest sends head and part of a body to the server at base, and
// returns the connection.
func stalledRequest(t *testing.T, base, head string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	_, err = fmt.Fprintf(c, "%s\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n{", head, testToken)
	require.NoError(t, err)
	return c
}

// TestServeBodiesTimeOut: through the whole stack (telemetry, access log,
// mux), a stalled body is answered 408 after SANDGATE_BODY_IDLE_TIMEOUT,
// on the API's routes and the gate's; bodies beyond SANDGATE_MAX_BODIES are
// answered 503; stalled headers are cut after SANDGATE_READ_HEADER_TIMEOUT
// (issue 11 item 3).
func TestServeBodiesTimeOut(t *testing.T) {
	t.Parallel()
	base, _, logs := started(t, testConfig(t, map[string]string{
		"SANDGATE_BODY_IDLE_TIMEOUT": "400ms", "SANDGATE_MAX_BODIES": "2", "SANDGATE_READ_HEADER_TIMEOUT": "400ms",
	}), portfake.NewProvider())
	answer := func(conn net.Conn) (int, string) {
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, head := range []string{
		"POST /v1/sessions/s1/exec HTTP/1.1\r\nContent-Length: 50",
		"POST /internal/v1/gate/report HTTP/1.1\r\nContent-Length: 50",
	} {
		status, body := answer(stalledRequest(t, base, head))
		if strings.Contains(head, "gate") {
			// The gate's handler refuses a wrong token before it reads.
			require.Equal(t, http.StatusUnauthorized, status, body)
			continue
		}
		require.Equal(t, http.StatusRequestTimeout, status, body)
		require.Contains(t, body, `"request_timeout"`)
	}

	c1 := stalledRequest(t, base, "POST /v1/sessions/s1/exec HTTP/1.1\r\nContent-Length: 50")
	c2 := stalledRequest(t, base, "PUT /v1/sessions/s1 HTTP/1.1\r\nContent-Length: 50")
	time.Sleep(100 * time.Millisecond) // both hold their slots
	status, body := answer(stalledRequest(t, base, "PUT /v1/sessions/s2 HTTP/1.1\r\nContent-Length: 50"))
	require.Equal(t, http.StatusServiceUnavailable, status, body)
	require.Contains(t, body, `"busy"`)
	for _, c := range []net.Conn{c1, c2} {
		status, _ := answer(c)
		require.Equal(t, http.StatusRequestTimeout, status)
	}

	// The guard keeps the request the muxes set the route on.
	require.Contains(t, logs.String(), `"route":"POST /v1/sessions/{id}/exec","path":"/v1/sessions/s1/exec","status":408`)

	// The guard keeps the request the muxes set the route on.
	require.Contains(t, logs.String(), `"route":"POST /v1/sessions/{id}/exec","path":"/v1/sessions/s1/exec","status":408`)

	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	require.NoError(t, err)
	defer func() { _ = conn.Close() }()
	_, err = fmt.Fprint(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\n")
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
	_, err = conn.Read(make([]byte, 1))
	require.ErrorIs(t, err, io.EOF, "the server hangs up on headers that stall")
}

// TestServeRefusalsAreSampled: a flood without the token costs a bounded
// log, access lines included (issue 11 item 13: 20 MB in 12 s).
func TestServeRefusalsAreSampled(t *testing.T) {
	t.Parallel()
	base, _, logs := started(t, testConfig(t, nil), portfake.NewProvider())
	const flood = 300
	for range flood {
		status, _ := get(t, base+"/v1/sessions", "wrong-token-0123456789")
		require.Equal(t, http.StatusUnauthorized, status)
	}
	lines := strings.Count(logs.String(), "\n")
	// Each sampler lets its burst of 20 through, and 10 a second after.
	require.Less(t, lines, 2*(20+10*5)+10, "log lines for %d refused requests", flood)
	require.Contains(t, logs.String(), `"suppressed":`)
}
