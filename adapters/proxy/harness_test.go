package proxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/egress"
	"github.com/sandgate/sandgate/core/gatewire"
)

const (
	sessionID = "ses_proxytest"
	secretA   = "SECRET-A-0123456789"
	secretB   = "SECRET-B-abcdefghij"
	testWait  = 10 * time.Second
)

var (
	testSID = domain.MustParseSessionID(sessionID)
	phA     = egress.Placeholder(testSID, "a")
	phB     = egress.Placeholder(testSID, "b")
)

// limited is a limited config allowing hosts on every port (test origins
// listen on ephemeral ports; an entry that already names a port keeps it),
// with credential "a" bound to hostsA for headers and body and "b" bound to
// hostsB for headers only.
func limited(hosts []string, hostsA, hostsB []string) gatewire.Config {
	cfg := gatewire.Config{Networking: domain.Networking{Type: domain.NetLimited, AllowedHosts: anyPort(hosts...)}}
	if len(hostsA) > 0 {
		cfg.Credentials = append(cfg.Credentials, gatewire.Credential{
			ID: "cred-a", Placeholder: phA, Secret: gatewire.NewSecret(secretA), AllowedHosts: hostsA,
			Locations: []gatewire.Location{gatewire.LocationHeaders, gatewire.LocationBody},
		})
	}
	if len(hostsB) > 0 {
		cfg.Credentials = append(cfg.Credentials, gatewire.Credential{
			ID: "cred-b", Placeholder: phB, Secret: gatewire.NewSecret(secretB), AllowedHosts: hostsB,
			Locations: []gatewire.Location{gatewire.LocationHeaders},
		})
	}
	return cfg
}

// anyPort spells each bare allowed_hosts entry with ":*".
func anyPort(hosts ...string) []string {
	out := make([]string, len(hosts))
	for i, h := range hosts {
		out[i] = h
		if p, err := egress.ParsePattern(h); err == nil && p.Host() == h {
			out[i] = h + ":*"
		}
	}
	return out
}

func unrestricted() gatewire.Config {
	return gatewire.Config{Networking: domain.Networking{Type: domain.NetUnrestricted}}
}

// spanSink records spans and signals each end, so tests await spans
// instead of sleeping.
type spanSink struct {
	*tracetest.SpanRecorder
	ended chan struct{}
}

func (s *spanSink) OnEnd(sp sdktrace.ReadOnlySpan) {
	s.SpanRecorder.OnEnd(sp)
	s.ended <- struct{}{}
}

// wait returns the ended spans once there are n of them.
func (s *spanSink) wait(t *testing.T, n int) []sdktrace.ReadOnlySpan {
	t.Helper()
	timeout := time.After(testWait)
	for len(s.Ended()) < n {
		select {
		case <-s.ended:
		case <-timeout:
			require.FailNow(t, "spans did not end", "want %d, have %d", n, len(s.Ended()))
		}
	}
	return s.Ended()
}

type harness struct {
	p     *Proxy
	addr  string // the proxy's host:port
	spans *spanSink
}

// start runs a proxy on a loopback listener; cfg nil leaves it unconfigured.
func start(t *testing.T, opts Options, cfg *gatewire.Config) *harness {
	t.Helper()
	sink := &spanSink{SpanRecorder: tracetest.NewSpanRecorder(), ended: make(chan struct{}, 1024)}
	opts.SessionID = testSID
	opts.Tracer = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sink))
	p, err := New(opts)
	require.NoError(t, err)
	if cfg != nil {
		require.NoError(t, p.SetConfig(*cfg))
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- p.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testWait)
		defer cancel()
		require.NoError(t, p.Shutdown(ctx))
		require.NoError(t, <-served)
	})
	return &harness{p: p, addr: ln.Addr().String(), spans: sink}
}

// client returns an HTTP client that uses the proxy; roots verify TLS
// origins reached through CONNECT.
func (h *harness) client(roots *x509.CertPool) *http.Client {
	u := &url.URL{Scheme: "http", Host: h.addr}
	return &http.Client{
		Transport: &http.Transport{
			Proxy:              http.ProxyURL(u),
			TLSClientConfig:    &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
			DisableCompression: true,
		},
		Timeout: testWait,
	}
}

// origin is a loopback HTTP server that counts the connections it accepts.
type origin struct {
	*httptest.Server
	conns atomic.Int32
}

func newOrigin(t *testing.T, h http.Handler, useTLS bool) *origin {
	t.Helper()
	o := &origin{Server: httptest.NewUnstartedServer(h)}
	o.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			o.conns.Add(1)
		}
	}
	if useTLS {
		o.StartTLS()
	} else {
		o.Start()
	}
	t.Cleanup(o.Close)
	return o
}

// hostPort is the origin's 127.0.0.1:port.
func (o *origin) hostPort() string {
	return strings.TrimPrefix(strings.TrimPrefix(o.URL, "http://"), "https://")
}

func (o *origin) port() string {
	_, p, _ := net.SplitHostPort(o.hostPort())
	return p
}

// roots trusts the origin's test certificate.
func (o *origin) roots() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(o.Certificate())
	return pool
}

// get fetches url through the proxy and returns the status and body.
func get(t *testing.T, c *http.Client, rawURL string, hdr http.Header) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, rawURL, nil)
	require.NoError(t, err)
	if hdr != nil {
		req.Header = hdr
	}
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

// dialProxy opens a raw connection to the proxy, closed at the test's end,
// with a deadline so nothing blocks past testWait.
func dialProxy(t testing.TB, addr string) net.Conn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, testWait)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	require.NoError(t, conn.SetDeadline(time.Now().Add(testWait)))
	return conn
}

// rawRequest sends one raw request over a fresh connection to the proxy
// and returns the parsed response (body read whole).
func rawRequest(t *testing.T, addr, raw string) (*http.Response, string) {
	t.Helper()
	conn := dialProxy(t, addr)
	_, err := io.WriteString(conn, raw)
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(body)
}

// connect opens a CONNECT tunnel through the proxy and returns the
// connection after a 200 (or fails the test with the status).
func connect(t testing.TB, addr, authority string) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn := dialProxy(t, addr)
	_, err := io.WriteString(conn, "CONNECT "+authority+" HTTP/1.1\r\nHost: "+authority+"\r\n\r\n")
	require.NoError(t, err)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	return conn, br
}

// fakeResolver answers from a table and counts lookups.
type fakeResolver struct {
	answers map[string][][]netip.Addr // successive answers per name; the last repeats
	calls   atomic.Int32
}

func (f *fakeResolver) resolve(_ context.Context, host string) ([]netip.Addr, error) {
	n := int(f.calls.Add(1)) - 1
	as, ok := f.answers[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	if n >= len(as) {
		n = len(as) - 1
	}
	return as[n], nil
}

func addrs(ss ...string) []netip.Addr {
	out := make([]netip.Addr, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParseAddr(s)
	}
	return out
}
