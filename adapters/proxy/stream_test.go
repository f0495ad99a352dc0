package proxy

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// lockstep is an origin that sends an event, waits until the client has
// acknowledged it, and only then sends the next: a proxy that buffers the
// response deadlocks it (and the test's bounded wait fails).
func lockstep(acks chan struct{}, contentType string, events ...string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		for _, e := range events {
			_, _ = io.WriteString(w, e)
			_ = http.NewResponseController(w).Flush()
			select {
			case <-acks:
			case <-r.Context().Done():
				return
			case <-time.After(testWait):
				return
			}
		}
	})
}

// streamGet starts origin h behind a proxy that binds credential a to the
// origin's host and GETs it: plain HTTP, or HTTPS through an intercepted
// tunnel.
func streamGet(t *testing.T, h http.Handler, intercepted bool) (*http.Response, error) {
	t.Helper()
	if intercepted {
		o, hp, _ := mitmSetup(t, h, Options{})
		return hp.client(hp.caPool(t)).Get("https://api.example.com:" + o.port() + "/")
	}
	o := newOrigin(t, h, false)
	res := &fakeResolver{answers: map[string][][]netip.Addr{"sse.test": {addrs("127.0.0.1")}}}
	cfg := limited([]string{"sse.test", "127.0.0.1"}, []string{"sse.test"}, nil)
	hp := start(t, Options{Resolve: res.resolve}, &cfg)
	return hp.client(nil).Get("http://sse.test:" + o.port() + "/")
}

func TestStreamingFlowsUnbuffered(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		ct          string
		intercepted bool
	}{
		{"text/event-stream", false},
		{"application/octet-stream", false},
		{"text/event-stream", true},
		{"application/octet-stream", true},
	} {
		t.Run(tc.ct+map[bool]string{true: " intercepted"}[tc.intercepted], func(t *testing.T) {
			t.Parallel()
			acks := make(chan struct{})
			// The secret is split across two events: redaction must still
			// catch it while every event flows at once.
			events := []string{"data: one\n\n", "data: two " + secretA[:7], secretA[7:] + " end\n\n", "data: three\n\n"}
			resp, err := streamGet(t, lockstep(acks, tc.ct, events...), tc.intercepted)
			require.NoError(t, err)
			defer func() { _ = resp.Body.Close() }()
			br := bufio.NewReader(resp.Body)
			for _, want := range []string{"data: one\n", "\n"} {
				line, err := br.ReadString('\n')
				require.NoError(t, err)
				require.Equal(t, want, line)
			}
			acks <- struct{}{}
			// The second event ends inside the secret: its first part must
			// wait for the rest (it could be the secret), so ack it blind.
			acks <- struct{}{}
			for _, want := range []string{"data: two " + phA + " end\n", "\n"} {
				line, err := br.ReadString('\n')
				require.NoError(t, err)
				require.Equal(t, want, line)
			}
			acks <- struct{}{}
			line, err := br.ReadString('\n')
			require.NoError(t, err)
			require.Equal(t, "data: three\n", line)
			acks <- struct{}{}
			rest, err := io.ReadAll(br)
			require.NoError(t, err)
			require.Equal(t, "\n", string(rest))
		})
	}
}

func TestHeaderTimeoutCutsSlowloris(t *testing.T) {
	t.Parallel()
	h := start(t, Options{HeaderTimeout: 300 * time.Millisecond}, ptr(unrestricted()))
	conn := dialProxy(t, h.addr)
	_, err := io.WriteString(conn, "GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\n")
	require.NoError(t, err)
	start := time.Now()
	closed := make(chan error, 1)
	go func() {
		_, err := io.ReadAll(conn) // returns when the server closes
		closed <- err
	}()
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-closed:
			// EOF or a reset (the server closed with our bytes unread);
			// never our own deadline.
			require.False(t, isTimeout(err), "%v", err)
			require.Less(t, time.Since(start), 5*time.Second)
			return
		case <-tick.C:
			_, _ = io.WriteString(conn, "X") // one more byte of a never-ending header
		case <-ctx.Done():
			require.FailNow(t, "the proxy never cut the slow client off")
		}
	}
}

// wsOrigin accepts a WebSocket upgrade and echoes raw bytes back (the test
// needs no framing to show the relay works both ways).
func wsOrigin() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isWebSocket(r.Header) {
			http.Error(w, "want websocket", http.StatusBadRequest)
			return
		}
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer func() { _ = conn.Close() }()
		_, _ = io.WriteString(conn, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
		_, _ = io.Copy(conn, brw)
	})
}

const wsRequest = "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"

// upgradeAndEcho sends a WebSocket upgrade for target over rw, expects a
// 101 and an echo of a few bytes.
func upgradeAndEcho(t *testing.T, conn net.Conn, br *bufio.Reader, requestTarget, host string) {
	t.Helper()
	_, err := io.WriteString(conn, "GET "+requestTarget+" HTTP/1.1\r\nHost: "+host+"\r\n"+wsRequest)
	require.NoError(t, err)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusSwitchingProtocols, resp.StatusCode)
	require.True(t, isWebSocket(resp.Header))
	_, err = io.WriteString(conn, "ping-frame")
	require.NoError(t, err)
	got := make([]byte, len("ping-frame"))
	_, err = io.ReadFull(br, got)
	require.NoError(t, err)
	require.Equal(t, "ping-frame", string(got))
}

func TestWebSocketPlain(t *testing.T) {
	t.Parallel()
	o := newOrigin(t, wsOrigin(), false)
	cfg := limited([]string{"127.0.0.1"}, nil, nil)
	h := start(t, Options{}, &cfg)
	conn := dialProxy(t, h.addr)
	upgradeAndEcho(t, conn, bufio.NewReader(conn), o.URL+"/ws", o.hostPort())
	require.NoError(t, conn.Close())
	spans := h.spans.wait(t, 1)
	require.Equal(t, int64(http.StatusSwitchingProtocols), attr(spans[0], "http.response.status_code").AsInt64())
}

func TestRevoke(t *testing.T) {
	t.Parallel()
	o := newOrigin(t, echo(nil), false)
	cfg := limited([]string{"127.0.0.1"}, nil, nil)
	h := start(t, Options{}, &cfg)
	// A live tunnel is closed by Revoke.
	tun, tbr := connect(t, h.addr, o.hostPort())
	status, _ := get(t, h.client(nil), o.URL+"/", nil)
	require.Equal(t, http.StatusOK, status)

	h.p.Revoke()
	require.False(t, h.p.Ready())
	require.ErrorIs(t, h.p.SetConfig(cfg), ErrRevoked)
	_, err := io.ReadAll(tbr)
	require.NoError(t, err, "the tunnel ends at Revoke")
	_ = tun
	status, body := get(t, h.client(nil), o.URL+"/", nil)
	require.Equal(t, http.StatusForbidden, status)
	require.Equal(t, fixedBody(reasonDenied), body)
	resp, _ := rawRequest(t, h.addr, "CONNECT "+o.hostPort()+" HTTP/1.1\r\nHost: x\r\n\r\n")
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	resp, _ = rawRequest(t, h.addr, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
}

func TestInvalidConfigKeepsLastGood(t *testing.T) {
	t.Parallel()
	o := newOrigin(t, echo(nil), false)
	cfg := limited([]string{"127.0.0.1"}, nil, nil)
	h := start(t, Options{}, nil)
	bad := limited([]string{"127.1"}, nil, nil)
	require.Error(t, h.p.SetConfig(bad))
	require.False(t, h.p.Ready(), "no good config yet")
	require.NoError(t, h.p.SetConfig(cfg))
	err := h.p.SetConfig(bad)
	require.Error(t, err)
	require.Contains(t, err.Error(), "networking.allowed_hosts[0]")
	require.True(t, h.p.Ready())
	status, _ := get(t, h.client(nil), o.URL+"/", nil)
	require.Equal(t, http.StatusOK, status, "the last good config is still in force")
	_ = strings.TrimSpace
}
