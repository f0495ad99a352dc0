package proxy

import (
	"bufio"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/egress"
)

func TestConnectOpaque(t *testing.T) {
	t.Parallel()
	o := newOrigin(t, echo(nil), true)
	cfg := limited([]string{"127.0.0.1"}, nil, nil)
	h := start(t, Options{}, &cfg)
	c := h.client(o.roots())
	status, body := get(t, c, o.URL+"/tls", nil)
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, "GET /tls host="+o.hostPort())
	c.CloseIdleConnections() // ends the tunnel
	spans := h.spans.wait(t, 1)
	require.Equal(t, "CONNECT", attr(spans[0], "http.request.method").AsString())
	require.Equal(t, "127.0.0.1", attr(spans[0], "server.address").AsString())
	require.Equal(t, "allowed", attr(spans[0], "sandgate.verdict").AsString())
	require.Positive(t, attr(spans[0], "sandgate.bytes_sent").AsInt64())
	require.Positive(t, attr(spans[0], "sandgate.bytes_received").AsInt64())
}

func TestConnectRefusals(t *testing.T) {
	t.Parallel()
	o := newOrigin(t, echo(nil), false)
	cfg := limited([]string{"127.0.0.1", "api.example.com"}, nil, nil)
	h := start(t, Options{}, &cfg)
	for _, tc := range []struct {
		authority string
		rule      string
	}{
		{"10.1.2.3:443", egress.RuleNotAllowed},
		{"127.1:" + o.port(), egress.RuleNonCanonicalIP},
		{"2130706433:" + o.port(), egress.RuleNonCanonicalIP},
		{"127.0.0.1", egress.RuleInvalidHost},
	} {
		resp, body := rawRequest(t, h.addr, "CONNECT "+tc.authority+" HTTP/1.1\r\nHost: "+tc.authority+"\r\n\r\n")
		require.Equal(t, http.StatusForbidden, resp.StatusCode, tc.authority)
		require.Equal(t, fixedBody(reasonDenied), body)
	}
	spans := h.spans.wait(t, 4)
	for i, rule := range []string{egress.RuleNotAllowed, egress.RuleNonCanonicalIP, egress.RuleNonCanonicalIP, egress.RuleInvalidHost} {
		require.Equal(t, rule, attr(spans[i], "sandgate.rule").AsString())
	}
	require.Zero(t, o.conns.Load())
}

func TestConnectSNIMismatchCloses(t *testing.T) {
	t.Parallel()
	o := newOrigin(t, echo(nil), true)
	res := &fakeResolver{answers: map[string][][]netip.Addr{"origin.test": {addrs("127.0.0.1")}}}
	cfg := limited([]string{"origin.test", "127.0.0.1"}, nil, nil)
	h := start(t, Options{Resolve: res.resolve}, &cfg)
	authority := "origin.test:" + o.port()
	for _, tc := range []struct {
		name, sni string
		early     bool // the ClientHello comes in the CONNECT's write
		ok        bool
	}{
		{"matching SNI", "origin.test", false, true},
		{"matching SNI, other case and a trailing dot", "ORIGIN.test.", false, true},
		{"foreign SNI", "evil.test", false, false},
		{"matching SNI, hello in the CONNECT's write", "origin.test", true, true},
		{"foreign SNI, hello in the CONNECT's write", "evil.test", true, false},
	} {
		var conn net.Conn
		if tc.early {
			conn = &earlyConn{Conn: dialProxy(t, h.addr), head: "CONNECT " + authority + " HTTP/1.1\r\nHost: " + authority + "\r\n\r\n", t: t}
		} else {
			c, br := connect(t, h.addr, authority)
			conn = &bufConn{Conn: c, r: br}
		}
		// The origin's test certificate is for example.com, so verification
		// is left to this check: the test is about what the proxy lets through.
		// A handshake completes only when the origin got the hello intact.
		tc0 := tls.Client(conn, &tls.Config{ServerName: tc.sni, InsecureSkipVerify: true}) //nolint:gosec // see above
		err := tc0.Handshake()
		if tc.ok {
			require.NoError(t, err, tc.name)
		} else {
			require.Error(t, err, tc.name)
		}
		_ = conn.Close()
	}
	spans := h.spans.wait(t, 5)
	rules := map[string]int{}
	for _, s := range spans {
		rules[attr(s, "sandgate.rule").AsString()]++
	}
	require.Equal(t, map[string]int{"opened:127.0.0.1:*": 3, ruleSNIMismatch: 2}, rules)
}

// bufConn reads through the reader that already holds the CONNECT reply.
type bufConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufConn) Read(b []byte) (int, error) { return c.r.Read(b) }

func TestConnectNonTLSAndEarlyBytes(t *testing.T) {
	t.Parallel()
	o := newOrigin(t, echo(nil), false)
	cfg := limited([]string{"127.0.0.1"}, nil, nil)
	h := start(t, Options{}, &cfg)
	conn := dialProxy(t, h.addr)
	// CONNECT and the first request inside in one write: the bytes the
	// server buffered past the CONNECT must reach the origin.
	_, err := io.WriteString(conn, "CONNECT "+o.hostPort()+" HTTP/1.1\r\nHost: x\r\n\r\nGET /inner HTTP/1.1\r\nHost: "+o.hostPort()+"\r\n\r\n")
	require.NoError(t, err)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	resp, err = http.ReadResponse(br, nil)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, string(body), "GET /inner host="+o.hostPort())
}

func TestWebSocketThroughConnect(t *testing.T) {
	t.Parallel()
	o := newOrigin(t, wsOrigin(), false)
	cfg := limited([]string{"127.0.0.1"}, nil, nil)
	h := start(t, Options{}, &cfg)
	conn, br := connect(t, h.addr, o.hostPort())
	upgradeAndEcho(t, conn, br, "/ws", o.hostPort())
}

func TestMaxTunnels(t *testing.T) {
	t.Parallel()
	o := newOrigin(t, echo(nil), false)
	cfg := limited([]string{"127.0.0.1"}, nil, nil)
	h := start(t, Options{MaxTunnels: 1}, &cfg)
	first, _ := connect(t, h.addr, o.hostPort())
	resp, body := rawRequest(t, h.addr, "CONNECT "+o.hostPort()+" HTTP/1.1\r\nHost: x\r\n\r\n")
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	require.Equal(t, fixedBody(reasonTunnelLimit), body)
	// Closing the first frees its slot.
	require.NoError(t, first.Close())
	h.spans.wait(t, 2)
	connect(t, h.addr, o.hostPort())
}

// earlyConn sends a CONNECT request in the same write as the client's first
// bytes (a ClientHello), as some clients do, and reads past the reply.
type earlyConn struct {
	net.Conn
	head string
	br   *bufio.Reader
	t    *testing.T
}

func (c *earlyConn) Write(b []byte) (int, error) {
	if c.head == "" {
		return c.Conn.Write(b)
	}
	_, err := c.Conn.Write(append([]byte(c.head), b...))
	c.head = ""
	return len(b), err
}

func (c *earlyConn) Read(b []byte) (int, error) {
	if c.br == nil {
		c.br = bufio.NewReader(c.Conn)
		resp, err := http.ReadResponse(c.br, &http.Request{Method: http.MethodConnect})
		if err != nil {
			return 0, err
		}
		require.Equal(c.t, http.StatusOK, resp.StatusCode)
	}
	return c.br.Read(b)
}

// TestConnectPorts: a bare allowed_hosts entry admits the web ports only
// (a CONNECT to :22 or :8443 of an allowlisted host is refused before any
// dial); host:port admits exactly that port.
func TestConnectPorts(t *testing.T) {
	t.Parallel()
	o := newOrigin(t, echo(nil), false)
	other := newOrigin(t, echo(nil), false)
	cfg := limited(nil, nil, nil)
	cfg.Networking.AllowedHosts = []string{"127.0.0.1", "api.example.com", "localhost:" + o.port()}
	h := start(t, Options{}, &cfg)
	for _, authority := range []string{"api.example.com:22", "api.example.com:8443", "127.0.0.1:22", "127.0.0.1:" + o.port(), "localhost:" + other.port()} {
		resp, body := rawRequest(t, h.addr, "CONNECT "+authority+" HTTP/1.1\r\nHost: "+authority+"\r\n\r\n")
		require.Equal(t, http.StatusForbidden, resp.StatusCode, authority)
		require.Equal(t, fixedBody(reasonDenied), body)
	}
	for _, sp := range h.spans.wait(t, 5) {
		require.Equal(t, egress.RuleNotAllowed, attr(sp, "sandgate.rule").AsString())
	}
	require.Zero(t, o.conns.Load()+other.conns.Load(), "a refused port is never dialled")

	cfg.Networking.AllowedHosts = []string{"127.0.0.1:" + o.port()}
	require.NoError(t, h.p.SetConfig(cfg))
	conn, _ := connect(t, h.addr, "127.0.0.1:"+o.port())
	_, err := io.WriteString(conn, "GET /p HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	_ = resp.Body.Close()
}
