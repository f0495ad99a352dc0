package proxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const testIdle = 300 * time.Millisecond

// requireClosedSoon reads r until it ends and fails unless the proxy ended
// it (EOF or a reset) well before the test's own deadline.
func requireClosedSoon(t *testing.T, r io.Reader) {
	t.Helper()
	start := time.Now()
	_, err := io.Copy(io.Discard, r)
	require.NotErrorIs(t, err, os.ErrDeadlineExceeded, "the proxy never closed the idle connection")
	require.Less(t, time.Since(start), 5*time.Second)
}

// requireSlotsFree waits until every tunnel slot is back.
func requireSlotsFree(t *testing.T, h *harness) {
	t.Helper()
	require.Eventually(t, func() bool { return len(h.p.slots) == 0 }, testWait, 10*time.Millisecond)
}

// tcpEcho is a loopback TCP echo server.
func tcpEcho(t *testing.T) string {
	t.Helper()
	return tcpServer(t, func(c net.Conn) { _, _ = io.Copy(c, c) })
}

// TestTunnelIdleTimeoutOpaque: an opaque tunnel that moves no byte for
// TunnelIdleTimeout is closed and its slot freed; one that keeps talking
// outlives the timeout several times over. The busy tunnel talks without
// pause and the timeout is a whole second, so only a process stall longer
// than that (not a slow scheduler under -race on two cores, which closed a
// tunnel pausing 100 ms against a 300 ms timeout) could close it.
func TestTunnelIdleTimeoutOpaque(t *testing.T) {
	t.Parallel()
	const idleTimeout = time.Second
	addr := tcpEcho(t)
	cfg := limited([]string{"127.0.0.1"}, nil, nil)
	h := start(t, Options{TunnelIdleTimeout: idleTimeout}, &cfg)

	_, idle := connect(t, h.addr, addr)
	busy, br := connect(t, h.addr, addr)
	closed := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, idle)
		closed <- err
	}()
	for end := time.Now().Add(5 * idleTimeout / 2); time.Now().Before(end); {
		_, err := io.WriteString(busy, "x")
		require.NoError(t, err)
		b, err := br.ReadByte()
		require.NoError(t, err, "an active tunnel must stay open")
		require.Equal(t, byte('x'), b)
	}
	select {
	case err := <-closed:
		require.NotErrorIs(t, err, os.ErrDeadlineExceeded, "the proxy never closed the idle tunnel")
	case <-time.After(testWait):
		require.FailNow(t, "the idle tunnel is still open")
	}
	require.NoError(t, busy.Close())
	requireSlotsFree(t, h)
}

// TestTunnelIdleTimeoutIntercepted: an intercepted tunnel idle between
// requests is closed; one awaiting a slow response head is not idle.
func TestTunnelIdleTimeoutIntercepted(t *testing.T) {
	t.Parallel()
	o, h, _ := mitmSetup(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			time.Sleep(3 * testIdle)
		}
		_, _ = io.WriteString(w, "ok")
	}), Options{TunnelIdleTimeout: testIdle})
	authority := "api.example.com:" + o.port()
	tc, br := innerTLS(t, h, authority, "api.example.com")
	_, err := io.WriteString(tc, "GET /slow HTTP/1.1\r\nHost: "+authority+"\r\n\r\n")
	require.NoError(t, err)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err, "a tunnel awaiting a response head is not idle")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	_, _ = io.Copy(io.Discard, resp.Body)
	requireClosedSoon(t, br)
	requireSlotsFree(t, h)
}

// TestTunnelIdleTimeoutWebSocket: a plain WebSocket upgrade that goes
// quiet is closed too.
func TestTunnelIdleTimeoutWebSocket(t *testing.T) {
	t.Parallel()
	o := newOrigin(t, wsOrigin(), false)
	cfg := limited([]string{"127.0.0.1"}, nil, nil)
	h := start(t, Options{TunnelIdleTimeout: testIdle}, &cfg)
	conn := dialProxy(t, h.addr)
	br := bufio.NewReader(conn)
	upgradeAndEcho(t, conn, br, o.URL+"/ws", o.hostPort())
	requireClosedSoon(t, br)
	spans := h.spans.wait(t, 1)
	require.Equal(t, int64(http.StatusSwitchingProtocols), attr(spans[0], "http.response.status_code").AsInt64())
}
