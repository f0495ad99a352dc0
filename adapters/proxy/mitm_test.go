package proxy

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/gatewire"
)

// The TLS origins of these tests present net/http's test certificate,
// which names example.com and *.example.com: the fake resolver sends those
// names to 127.0.0.1, and the proxy verifies the origin with that
// certificate as its RootCAs. Nothing resolves or dials outside loopback.

// mitmSetup starts a TLS origin and a proxy that intercepts api.example.com
// (credential a, headers and body; credential b, headers).
func mitmSetup(t *testing.T, h http.Handler, opts Options) (*origin, *harness, gatewire.Config) {
	t.Helper()
	o := newOrigin(t, h, true)
	res := &fakeResolver{answers: map[string][][]netip.Addr{
		"api.example.com":   {addrs("127.0.0.1")},
		"other.example.com": {addrs("127.0.0.1")},
	}}
	cfg := limited([]string{"api.example.com", "other.example.com", "127.0.0.1"}, []string{"api.example.com"}, []string{"api.example.com"})
	opts.Resolve = res.resolve
	if opts.RootCAs == nil {
		opts.RootCAs = o.roots()
	}
	return o, start(t, opts, &cfg), cfg
}

// caPool trusts the proxy's session CA, as the sandbox's bundle does.
func (h *harness) caPool(t *testing.T) *x509.CertPool {
	t.Helper()
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(h.p.CACertPEM()))
	return pool
}

// innerTLS opens a CONNECT to authority and a TLS session inside it that
// trusts the session CA.
func innerTLS(t *testing.T, h *harness, authority, sni string) (*tls.Conn, *bufio.Reader) {
	t.Helper()
	conn, br := connect(t, h.addr, authority)
	tc := tls.Client(&bufConn{Conn: conn, r: br}, &tls.Config{ServerName: sni, RootCAs: h.caPool(t), MinVersion: tls.VersionTLS12})
	require.NoError(t, tc.Handshake())
	return tc, bufio.NewReader(tc)
}

func TestInterceptSubstitutesAndRedacts(t *testing.T) {
	t.Parallel()
	var seen atomic.Pointer[string]
	o, h, _ := mitmSetup(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Echo the secret back in a header and, split across two writes,
		// in the body.
		w.Header().Set("X-Echo", r.Header.Get("Authorization"))
		body, _ := io.ReadAll(r.Body)
		s := r.Host + "|" + r.Header.Get("Authorization") + "|" + r.Header.Get("X-Other") + "|" + string(body)
		seen.Store(&s)
		_, _ = io.WriteString(w, "echo: "+secretA[:5])
		_ = http.NewResponseController(w).Flush()
		_, _ = io.WriteString(w, secretA[5:]+" done")
	}), Options{})
	c := h.client(h.caPool(t))
	url := "https://api.example.com:" + o.port() + "/v1"
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader("k="+phA))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+phA)
	req.Header.Set("X-Other", phB)
	resp, err := c.Do(req)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	require.Equal(t, "api.example.com:"+o.port()+"|Bearer "+secretA+"|"+secretB+"|k="+secretA, *seen.Load())
	require.Equal(t, "echo: "+phA+" done", string(body))
	require.Equal(t, "Bearer "+phA, resp.Header.Get("X-Echo"))
	// The leaf the client verified came from the session CA.
	require.Equal(t, "api.example.com", resp.TLS.PeerCertificates[0].DNSNames[0])
	c.CloseIdleConnections()
	spans := h.spans.wait(t, 2)
	requireNoSecrets(t, spans)
	byMethod := map[string]int{}
	for _, s := range spans {
		byMethod[attr(s, "http.request.method").AsString()]++
		if attr(s, "http.request.method").AsString() == http.MethodPost {
			require.ElementsMatch(t, []string{"cred-a", "cred-b"}, attr(s, "sandgate.credential_ids").AsStringSlice())
		}
	}
	require.Equal(t, map[string]int{http.MethodConnect: 1, http.MethodPost: 1}, byMethod)
}

func TestInterceptInnerRequestMustNameAuthority(t *testing.T) {
	t.Parallel()
	o, h, _ := mitmSetup(t, echo(nil), Options{})
	authority := "api.example.com:" + o.port()
	for _, tc := range []struct{ name, request string }{
		{"other Host", "GET / HTTP/1.1\r\nHost: other.example.com:" + o.port() + "\r\n\r\n"},
		{"other absolute URL", "GET https://other.example.com:" + o.port() + "/ HTTP/1.1\r\nHost: " + authority + "\r\n\r\n"},
		{"other port", "GET / HTTP/1.1\r\nHost: api.example.com\r\n\r\n"},
		{"no Host", "GET / HTTP/1.0\r\n\r\n"},
	} {
		tc0, br := innerTLS(t, h, authority, "api.example.com")
		_, err := io.WriteString(tc0, tc.request)
		require.NoError(t, err)
		resp, err := http.ReadResponse(br, nil)
		require.NoError(t, err, tc.name)
		body, _ := io.ReadAll(resp.Body)
		require.Equal(t, http.StatusForbidden, resp.StatusCode, tc.name)
		require.Equal(t, fixedBody(reasonMismatch), string(body), tc.name)
		require.True(t, resp.Close, "a mismatch ends the tunnel")
	}
	require.Zero(t, o.conns.Load(), "a mismatched request never reaches an upstream")
	// The matching request on a fresh tunnel goes through.
	tc0, br := innerTLS(t, h, authority, "api.example.com")
	_, err := io.WriteString(tc0, "GET /ok HTTP/1.1\r\nHost: "+authority+"\r\n\r\n")
	require.NoError(t, err)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

func TestInterceptSNIMismatch(t *testing.T) {
	t.Parallel()
	o, h, _ := mitmSetup(t, echo(nil), Options{})
	for _, sni := range []string{"other.example.com", ""} {
		conn, br := connect(t, h.addr, "api.example.com:"+o.port())
		tc := tls.Client(&bufConn{Conn: conn, r: br}, &tls.Config{ServerName: sni, InsecureSkipVerify: true}) //nolint:gosec // the check is the proxy's, not the client's
		require.Error(t, tc.Handshake(), "SNI %q", sni)
	}
	spans := h.spans.wait(t, 2)
	for _, s := range spans {
		require.Equal(t, ruleSNIMismatch, attr(s, "sandgate.rule").AsString())
		require.Equal(t, "denied", attr(s, "sandgate.verdict").AsString())
	}
	require.Zero(t, o.conns.Load())
}

func TestInterceptUpstreamFailures(t *testing.T) {
	t.Parallel()
	t.Run("unreachable upstream answers 502", func(t *testing.T) {
		t.Parallel()
		_, h, _ := mitmSetup(t, echo(nil), Options{})
		dead, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		port := itoa(dead.Addr().(*net.TCPAddr).Port)
		require.NoError(t, dead.Close())
		tc, br := innerTLS(t, h, "api.example.com:"+port, "api.example.com")
		_, err = io.WriteString(tc, "GET / HTTP/1.1\r\nHost: api.example.com:"+port+"\r\n\r\n")
		require.NoError(t, err)
		resp, err := http.ReadResponse(br, nil)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		require.Equal(t, http.StatusBadGateway, resp.StatusCode)
		require.Equal(t, fixedBody(reasonUpstream), string(body))
	})
	t.Run("unverifiable upstream certificate answers 502", func(t *testing.T) {
		t.Parallel()
		o, h, _ := mitmSetup(t, echo(nil), Options{RootCAs: x509.NewCertPool()})
		status, body := get(t, h.client(h.caPool(t)), "https://api.example.com:"+o.port()+"/", nil)
		require.Equal(t, http.StatusBadGateway, status)
		require.Equal(t, fixedBody(reasonUpstream), body)
		require.Equal(t, int32(1), o.conns.Load(), "the handshake was tried and refused")
	})
}

func TestInterceptRechecksPolicy(t *testing.T) {
	t.Parallel()
	o, h, cfg := mitmSetup(t, echo(nil), Options{})
	authority := "api.example.com:" + o.port()
	tc, br := innerTLS(t, h, authority, "api.example.com")
	ask := func() int {
		_, err := io.WriteString(tc, "GET / HTTP/1.1\r\nHost: "+authority+"\r\n\r\n")
		require.NoError(t, err)
		resp, err := http.ReadResponse(br, nil)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}
	require.Equal(t, http.StatusOK, ask())
	cfg.Networking.AllowedHosts = anyPort("other.example.com", "127.0.0.1")
	require.NoError(t, h.p.SetConfig(cfg))
	require.Equal(t, http.StatusForbidden, ask(), "the same tunnel, decided again")
	h.p.Revoke()
	_, err := io.ReadAll(br) // ends at Revoke, long before the connection's deadline
	require.False(t, isTimeout(err), "Revoke closes the intercepted tunnel: %v", err)
}

func TestInterceptHostOutsideCA(t *testing.T) {
	t.Parallel()
	o, h, cfg := mitmSetup(t, echo(nil), Options{})
	// A credential for a host added after the CA was minted cannot be
	// intercepted: the CONNECT is refused rather than left opaque.
	cfg.Credentials[1].AllowedHosts = []string{"other.example.com"}
	require.NoError(t, h.p.SetConfig(cfg))
	resp, body := rawRequest(t, h.addr, "CONNECT other.example.com:"+o.port()+" HTTP/1.1\r\nHost: x\r\n\r\n")
	require.Equal(t, http.StatusBadGateway, resp.StatusCode)
	require.Equal(t, fixedBody(reasonIntercept), body)
}

// TestWebSocketToBoundHostRefused: frames after a 101 would pass echo
// redaction by, so a WebSocket to a host with bound credentials is refused
// before the origin sees it, intercepted or plain.
func TestWebSocketToBoundHostRefused(t *testing.T) {
	t.Parallel()
	o, h, _ := mitmSetup(t, wsOrigin(), Options{})
	authority := "api.example.com:" + o.port()
	tc, br := innerTLS(t, h, authority, "api.example.com")
	_, err := io.WriteString(tc, "GET /ws HTTP/1.1\r\nHost: "+authority+"\r\n"+wsRequest)
	require.NoError(t, err)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, fixedBody(reasonUpgradeBound), string(body))

	plain := newOrigin(t, wsOrigin(), false)
	cfg := limited([]string{"127.0.0.1"}, []string{"127.0.0.1"}, nil)
	hp := start(t, Options{}, &cfg)
	presp, _ := rawRequest(t, hp.addr, "GET "+plain.URL+"/ws HTTP/1.1\r\nHost: "+plain.hostPort()+"\r\n"+wsRequest)
	require.Equal(t, http.StatusForbidden, presp.StatusCode)
	require.Zero(t, o.conns.Load(), "the origin never saw the upgrade")
	require.Zero(t, plain.conns.Load(), "the origin never saw the upgrade")
}

// TestInterceptEchoChannels: a credential-bound origin that hands the
// secret back in its reason phrase, a header name, a trailer or an
// escaped form in the body gets none of it to the sandbox.
func TestInterceptEchoChannels(t *testing.T) {
	t.Parallel()
	b64 := base64.StdEncoding.EncodeToString([]byte("user:" + secretA))
	body := `{"json":"` + strings.ReplaceAll(secretA, "-", "\u002d") + `","q":"` + url.QueryEscape(secretA+" x") + `","b":"` + b64 + `"}`
	o, h, _ := mitmSetup(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer func() { _ = conn.Close() }()
		_, _ = fmt.Fprintf(brw, "HTTP/1.1 200 Fine %s\r\nX-%s: 1\r\nX-Kept: 1\r\nContent-Length: %d\r\n\r\n%s", secretA, secretA, len(body), body)
		_ = brw.Flush()
	}), Options{})
	authority := "api.example.com:" + o.port()
	tc, br := innerTLS(t, h, authority, "api.example.com")
	_, err := io.WriteString(tc, "GET /echo HTTP/1.1\r\nHost: "+authority+"\r\n\r\n")
	require.NoError(t, err)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	got, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, "200 OK", resp.Status)
	require.Equal(t, "1", resp.Header.Get("X-Kept"))
	for name := range resp.Header {
		require.NotContains(t, strings.ToLower(name), strings.ToLower(secretA))
	}
	require.NotContains(t, string(got), "0123456789", "%s", got)
	require.NotContains(t, string(got), b64)
	require.Equal(t, 3, strings.Count(string(got), phA), "%s", got)
}
