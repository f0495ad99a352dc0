package proxy

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/egress"
	"github.com/sandgate/sandgate/core/gatewire"
)

// echo answers with what it received: method, host, headers and body. The
// last answer is also kept in seen, since the proxy redacts secrets that
// come back in a response.
func echo(seen *atomic.Pointer[string]) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var b strings.Builder
		fmt.Fprintf(&b, "%s %s host=%s\n", r.Method, r.URL.RequestURI(), r.Host)
		for _, k := range []string{"Authorization", "X-Other", "X-Named", "Keep-Alive", "Proxy-Authorization", "Proxy-Foo", "Connection", "Traceparent"} {
			fmt.Fprintf(&b, "%s=%s\n", k, r.Header.Get(k))
		}
		fmt.Fprintf(&b, "body=%s\n", body)
		if seen != nil {
			s := b.String()
			seen.Store(&s)
		}
		_, _ = io.WriteString(w, b.String())
	})
}

func TestHealthz(t *testing.T) {
	t.Parallel()
	h := start(t, Options{}, nil)
	resp, body := rawRequest(t, h.addr, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.Equal(t, fixedBody(reasonNotReady), body)
	cfg := unrestricted()
	require.NoError(t, h.p.SetConfig(cfg))
	resp, body = rawRequest(t, h.addr, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "ok", body)
	resp, _ = rawRequest(t, h.addr, "GET /other HTTP/1.1\r\nHost: x\r\n\r\n")
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	resp, _ = rawRequest(t, h.addr, "POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
}

func TestPolicyOnPlainHTTP(t *testing.T) {
	t.Parallel()
	o := newOrigin(t, echo(nil), false)
	// The one allowed case has its own origin: o counts only connections
	// that refused requests must never make, while subtests run in parallel.
	allowed := newOrigin(t, echo(nil), false)
	for _, tc := range []struct {
		name   string
		cfg    *gatewire.Config
		url    string
		status int
		rule   string
	}{
		{"no config denies", nil, o.URL + "/", http.StatusForbidden, egress.RuleNoConfig},
		{"exact IP allowed", ptr(limited([]string{"127.0.0.1"}, nil, nil)), allowed.URL + "/", http.StatusOK, "opened:127.0.0.1:*"},
		{"other host only", ptr(limited([]string{"api.example.com"}, nil, nil)), o.URL + "/", http.StatusForbidden, egress.RuleNotAllowed},
		{"unrestricted keeps the loopback floor", ptr(unrestricted()), o.URL + "/", http.StatusForbidden, "floor:loopback"},
		{"decimal spelling", ptr(unrestricted()), "http://2130706433:" + o.port() + "/", http.StatusForbidden, egress.RuleNonCanonicalIP},
		{"hex spelling", ptr(unrestricted()), "http://0x7f000001:" + o.port() + "/", http.StatusForbidden, egress.RuleNonCanonicalIP},
		{"short spelling", ptr(limited([]string{"127.0.0.1"}, nil, nil)), "http://127.1:" + o.port() + "/", http.StatusForbidden, egress.RuleNonCanonicalIP},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := start(t, Options{}, tc.cfg)
			before := o.conns.Load()
			status, body := get(t, h.client(nil), tc.url, nil)
			require.Equal(t, tc.status, status, body)
			spans := h.spans.wait(t, 1)
			require.Equal(t, tc.rule, attr(spans[0], "sandgate.rule").AsString())
			if tc.status == http.StatusForbidden {
				require.Equal(t, fixedBody(reasonDenied), body)
				require.Equal(t, "denied", attr(spans[0], "sandgate.verdict").AsString())
				require.Equal(t, before, o.conns.Load(), "a refused request must not reach the origin")
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestResolverFloor(t *testing.T) {
	t.Parallel()
	o := newOrigin(t, echo(nil), false)
	res := &fakeResolver{answers: map[string][][]netip.Addr{
		"api.test":    {addrs("127.0.0.1")},
		"opened.test": {addrs("127.0.0.1")},
	}}
	cfg := limited([]string{"api.test", "opened.test", "127.0.0.1"}, nil, nil)
	cfg.Networking.AllowedHosts = anyPort("api.test")
	h := start(t, Options{Resolve: res.resolve}, &cfg)
	status, body := get(t, h.client(nil), "http://api.test:"+o.port()+"/", nil)
	require.Equal(t, http.StatusForbidden, status)
	require.Equal(t, fixedBody(reasonDenied), body)
	require.Zero(t, o.conns.Load(), "a name resolving to loopback must not be dialled")
	require.Equal(t, "floor:loopback", attr(h.spans.wait(t, 1)[0], "sandgate.rule").AsString())

	// Opening the exact IP lets the same name through, to exactly that address.
	cfg.Networking.AllowedHosts = anyPort("opened.test", "127.0.0.1")
	require.NoError(t, h.p.SetConfig(cfg))
	status, body = get(t, h.client(nil), "http://opened.test:"+o.port()+"/x", nil)
	require.Equal(t, http.StatusOK, status, body)
	require.Contains(t, body, "host=opened.test:"+o.port())
	require.Equal(t, "opened:127.0.0.1:*", attr(h.spans.wait(t, 2)[1], "sandgate.rule").AsString())
}

func TestSubstitution(t *testing.T) {
	t.Parallel()
	var seen atomic.Pointer[string]
	o := newOrigin(t, echo(&seen), false)
	other := newOrigin(t, echo(&seen), false)
	// Both origins are 127.0.0.1; credentials bind by host name, so the
	// resolver gives each origin its own name.
	res := &fakeResolver{answers: map[string][][]netip.Addr{"api.test": {addrs("127.0.0.1")}, "other.test": {addrs("127.0.0.1")}}}
	cfg := limited([]string{"api.test", "other.test", "127.0.0.1"}, []string{"api.test"}, []string{"api.test"})
	h := start(t, Options{Resolve: res.resolve}, &cfg)
	c := h.client(nil)
	post := func(url, body string, hdr http.Header) string {
		req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		require.NoError(t, err)
		for k, v := range hdr {
			req.Header[k] = v
		}
		resp, err := c.Do(req)
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
		require.NotContains(t, string(b), secretA, "echoed secrets are redacted")
		require.NotContains(t, string(b), secretB, "echoed secrets are redacted")
		return *seen.Load()
	}
	hdr := http.Header{"Authorization": {"Bearer " + phA}, "X-Other": {phB + "," + phA}}
	got := post("http://api.test:"+o.port()+"/p?q="+phA, "k="+phA+"&j="+phB, hdr)
	require.Contains(t, got, "Authorization=Bearer "+secretA+"\n")
	require.Contains(t, got, "X-Other="+secretB+","+secretA+"\n")
	// A is enabled for the body, B only for headers: B travels literally.
	require.Contains(t, got, "body=k="+secretA+"&j="+phB+"\n")
	// The URI is never substituted.
	require.Contains(t, got, "/p?q="+phA+" ")

	// The same placeholders to an allowed host without the credentials bound
	// travel literally.
	got = post("http://other.test:"+other.port()+"/", "k="+phA, hdr)
	require.Contains(t, got, "Authorization=Bearer "+phA+"\n")
	require.Contains(t, got, "body=k="+phA+"\n")
	require.NotContains(t, got, secretA)

	spans := h.spans.wait(t, 2)
	require.ElementsMatch(t, []string{"cred-a", "cred-b"}, attr(spans[0], "sandgate.credential_ids").AsStringSlice())
	require.Empty(t, attr(spans[1], "sandgate.credential_ids").AsStringSlice())
	requireNoSecrets(t, spans)
}

func TestHopByHopHeaders(t *testing.T) {
	t.Parallel()
	o := newOrigin(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "X-Resp-Hop")
		w.Header().Set("X-Resp-Hop", "1")
		w.Header().Set("Keep-Alive", "timeout=5")
		w.Header().Set("Proxy-Bar", "1")
		w.Header().Set("X-Kept", "1")
		echo(nil).ServeHTTP(w, r)
	}), false)
	cfg := limited([]string{"127.0.0.1"}, nil, nil)
	h := start(t, Options{}, &cfg)
	resp, body := rawRequest(t, h.addr, "GET "+o.URL+"/ HTTP/1.1\r\nHost: "+o.hostPort()+
		"\r\nConnection: keep-alive, X-Named\r\nX-Named: 1\r\nKeep-Alive: timeout=5\r\nProxy-Authorization: Basic Zm9vOmJhcg==\r\nProxy-Foo: 1\r\n\r\n")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	for _, k := range []string{"X-Named", "Keep-Alive", "Proxy-Authorization", "Proxy-Foo", "Connection"} {
		require.Contains(t, body, "\n"+k+"=\n", k+" must not reach the origin")
	}
	require.Empty(t, resp.Header.Get("X-Resp-Hop"))
	require.Empty(t, resp.Header.Get("Keep-Alive"))
	require.Empty(t, resp.Header.Get("Proxy-Bar"))
	require.Equal(t, "1", resp.Header.Get("X-Kept"))
}

func TestHostHeaderNeverDecides(t *testing.T) {
	t.Parallel()
	o := newOrigin(t, echo(nil), false)
	res := &fakeResolver{answers: map[string][][]netip.Addr{"allowed.test": {addrs("127.0.0.1")}, "denied.test": {addrs("127.0.0.1")}}}
	cfg := limited([]string{"allowed.test", "127.0.0.1"}, nil, nil)
	h := start(t, Options{Resolve: res.resolve}, &cfg)
	// Allowed URI, foreign Host header: the URI decides and is what the
	// origin sees as Host.
	resp, body := rawRequest(t, h.addr, "GET http://allowed.test:"+o.port()+"/ HTTP/1.1\r\nHost: denied.test\r\n\r\n")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, body, "host=allowed.test:"+o.port()+"\n")
	// Denied URI, allowed Host header: refused.
	before := o.conns.Load()
	resp, body = rawRequest(t, h.addr, "GET http://denied.test:"+o.port()+"/ HTTP/1.1\r\nHost: allowed.test:"+o.port()+"\r\n\r\n")
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	require.Equal(t, fixedBody(reasonDenied), body)
	require.Equal(t, before, o.conns.Load())
}

func TestBodyLimits(t *testing.T) {
	t.Parallel()
	var received atomic.Int64
	o := newOrigin(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		received.Store(n)
	}), false)
	res := &fakeResolver{answers: map[string][][]netip.Addr{"body.test": {addrs("127.0.0.1")}, "plain.test": {addrs("127.0.0.1")}}}
	cfg := limited([]string{"body.test", "plain.test", "127.0.0.1"}, []string{"body.test"}, []string{"plain.test"})
	h := start(t, Options{Resolve: res.resolve}, &cfg)
	c := h.client(nil)
	send := func(url string, body io.Reader, size int64) int {
		req, err := http.NewRequest(http.MethodPost, url, body)
		require.NoError(t, err)
		req.ContentLength = size // -1: chunked
		resp, err := c.Do(req)
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}
	big := int64(egress.MaxBodyBytes + 1)
	bodyURL := "http://body.test:" + o.port() + "/"
	require.Equal(t, http.StatusRequestEntityTooLarge, send(bodyURL, bytes.NewReader(make([]byte, big)), big))
	require.Equal(t, http.StatusRequestEntityTooLarge, send(bodyURL, io.LimitReader(zeros{}, big), -1))
	require.Zero(t, o.conns.Load(), "a refused body must not reach the origin")
	require.Equal(t, http.StatusOK, send(bodyURL, io.LimitReader(zeros{}, big-1), -1))
	require.Equal(t, big-1, received.Load())
	// No credential enabled for the body: streamed, uncapped.
	huge := int64(3 * egress.MaxBodyBytes)
	require.Equal(t, http.StatusOK, send("http://plain.test:"+o.port()+"/", io.LimitReader(zeros{}, huge), -1))
	require.Equal(t, huge, received.Load())
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// TestProxyControlHeaders: every header naming a proxy (X-Upstream-*-Proxy
// steers some proxies' next hop) is stripped both ways; a name that merely
// contains the letters stays.
func TestProxyControlHeaders(t *testing.T) {
	t.Parallel()
	var got atomic.Pointer[http.Header]
	o := newOrigin(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := r.Header.Clone()
		got.Store(&h)
		w.Header().Set("X-Upstream-Http-Proxy", "http://10.0.0.1:3128")
		w.Header().Set("X-Proxy-Cache", "HIT")
		w.Header().Set("X-Proxyless", "1")
	}), false)
	cfg := limited([]string{"127.0.0.1:" + o.port()}, nil, nil)
	h := start(t, Options{}, &cfg)
	sent := []string{"X-Upstream-Https-Proxy", "X-Upstream-Http-Proxy", "X-Upstream-Proxy", "X-Proxy-Authorization", "X-Forwarded-Proxy", "proxy-foo"}
	raw := "GET " + o.URL + "/ HTTP/1.1\r\nHost: " + o.hostPort() + "\r\nX-Proxyless: 1\r\n"
	for _, k := range sent {
		raw += k + ": http://10.0.0.1:3128\r\n"
	}
	resp, _ := rawRequest(t, h.addr, raw+"\r\n")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	seen := *got.Load()
	for _, k := range sent {
		require.Empty(t, seen.Values(k), k+" must not reach the origin")
	}
	require.Equal(t, "1", seen.Get("X-Proxyless"))
	require.Empty(t, resp.Header.Values("X-Upstream-Http-Proxy"))
	require.Empty(t, resp.Header.Values("X-Proxy-Cache"))
	require.Equal(t, "1", resp.Header.Get("X-Proxyless"))
}
