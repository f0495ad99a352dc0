package proxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/elazarl/goproxy"

	"github.com/sandgate/sandgate/core/egress"
)

// tunnel is an intercepted CONNECT: its authority, which every request
// inside must name again, and the leaf the client is shown.
type tunnel struct {
	target egress.Target
	leaf   *tls.Certificate
	x      *exchange   // the tunnel's own span
	conn   *tunnelConn // the client connection, once goproxy has it
}

type tunnelKey struct{}

// intercept terminates the client's TLS with a leaf of the session CA for
// the authority's host and lets goproxy parse the requests inside; each is
// answered by onRequest with the tunnel's checks. The tunnel slot and span
// end when goproxy closes the client connection.
func (p *Proxy) intercept(w http.ResponseWriter, r *http.Request, t egress.Target, x *exchange) {
	leaf, err := p.leaf(t)
	if err != nil {
		p.release()
		x.write(w, http.StatusBadGateway, reasonIntercept)
		return
	}
	tun := &tunnel{target: t, leaf: leaf, x: x}
	hw := &hijackWriter{ResponseWriter: w, p: p, tun: tun}
	x.setStatus(http.StatusOK)
	p.gp.ServeHTTP(hw, r.WithContext(context.WithValue(r.Context(), tunnelKey{}, tun)))
	if !hw.hijacked.Load() {
		// goproxy refused before taking the connection: nothing will
		// close it for us.
		p.release()
		x.finish()
	}
}

func (p *Proxy) leaf(t egress.Target) (*tls.Certificate, error) {
	p.mu.Lock()
	a := p.auth
	p.mu.Unlock()
	if a == nil {
		return nil, errNoCA
	}
	return a.Leaf(t.Host.String())
}

// onConnect is goproxy's CONNECT handler; it only ever sees the CONNECTs
// intercept hands it, with the tunnel in the request's context.
func (p *Proxy) onConnect(host string, ctx *goproxy.ProxyCtx) (*goproxy.ConnectAction, string) {
	tun, ok := ctx.Req.Context().Value(tunnelKey{}).(*tunnel)
	if !ok {
		return goproxy.RejectConnect, host
	}
	ctx.UserData = tun
	return &goproxy.ConnectAction{Action: goproxy.ConnectMitm, TLSConfig: tun.tlsConfig}, host
}

var (
	errSNIMismatch = errors.New("client hello names another host")
	errNoCA        = errors.New("interception CA not minted yet")
)

// tlsConfig is the client-facing TLS of the tunnel: the leaf for the
// authority's host, offered only to a ClientHello whose SNI names that
// host (an IP authority may come without SNI, as clients send none for
// addresses).
func (tun *tunnel) tlsConfig(string, *goproxy.ProxyCtx) (*tls.Config, error) {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetCertificate: func(hi *tls.ClientHelloInfo) (*tls.Certificate, error) {
			if !tun.sniOK(hi.ServerName) {
				tun.x.deny(ruleSNIMismatch)
				return nil, errSNIMismatch
			}
			return tun.leaf, nil
		},
	}, nil
}

func (tun *tunnel) sniOK(sni string) bool {
	if sni == "" {
		return tun.target.Host.IsIP()
	}
	return sameHost(sni, tun.target.Host)
}

// newGoproxy configures goproxy as framing only: it never round-trips
// (onRequest answers every request), never dials (tunnels it handles are
// intercepted, and their upstream requests go through the proxy's
// transport), reads no proxy from the environment, logs nothing and has
// no error path that prints Go error text.
func (p *Proxy) newGoproxy() *goproxy.ProxyHttpServer {
	gp := goproxy.NewProxyHttpServer()
	gp.Logger = discardLogger{}
	gp.Verbose = false
	gp.Tr = p.tr
	gp.ConnectDial = nil
	gp.ConnectDialWithReq = func(*http.Request, string, string) (net.Conn, error) { return nil, errNoDial }
	gp.KeepAcceptEncoding = true
	gp.AllowHTTP2 = false
	gp.NonproxyHandler = http.HandlerFunc(p.serveLocal)
	gp.ConnectionErrHandler = func(w io.Writer, _ *goproxy.ProxyCtx, _ error) {
		_ = fixedResponse(nil, http.StatusBadGateway, reasonUpstream).Write(w)
	}
	gp.OnRequest().HandleConnectFunc(p.onConnect)
	gp.OnRequest().DoFunc(p.onRequest)
	return gp
}

var errNoDial = errors.New("goproxy does not dial")

type discardLogger struct{}

func (discardLogger) Printf(string, ...any) {}

// hijackWriter hands goproxy the client connection of an intercepted
// tunnel wrapped, so the tunnel's slot, span and registration end when
// goproxy closes it.
type hijackWriter struct {
	http.ResponseWriter
	p        *Proxy
	tun      *tunnel
	hijacked atomic.Bool
}

func (w *hijackWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	w.hijacked.Store(true)
	x := w.tun.x
	tc := &tunnelConn{Conn: c, x: x}
	// The TLS handshake and the first request head must come within
	// HeaderTimeout, or a silent tunnel would hold its slot forever.
	_ = tc.SetReadDeadline(time.Now().Add(w.p.opts.HeaderTimeout))
	untrack := w.p.track(tc)
	tc.idle = watchIdle(w.p.opts.TunnelIdleTimeout, func() { _ = tc.Close() })
	tc.done = func() {
		tc.idle.stop()
		untrack()
		w.p.release()
		x.finish()
	}
	// goproxy starts the tunnel's goroutine after Hijack returns: it sees
	// this.
	w.tun.conn = tc
	return tc, rw, nil
}

// flushWriter flushes after every write, so a chunked or SSE response
// reaches the client as the origin sends it (goproxy flushes only when the
// header says event-stream or chunked, and net/http's client hides
// Transfer-Encoding). A Content-Length response of one write costs nothing
// more.
type flushWriter struct {
	w http.ResponseWriter
	p *Proxy

	mu      sync.Mutex
	conn    net.Conn     // hijacked for a WebSocket
	upgrade *upgradeBody // the upstream side of that WebSocket
	untrack func()
}

func (f *flushWriter) Header() http.Header         { return f.w.Header() }
func (f *flushWriter) WriteHeader(code int)        { f.w.WriteHeader(code) }
func (f *flushWriter) Unwrap() http.ResponseWriter { return f.w }

func (f *flushWriter) Write(b []byte) (int, error) {
	n, err := f.w.Write(b)
	if err == nil {
		err = http.NewResponseController(f.w).Flush()
	}
	return n, err
}

func (f *flushWriter) Flush() { _ = http.NewResponseController(f.w).Flush() }

// Hijack hands goproxy the client connection of a plain WebSocket upgrade
// (the only plain request goproxy hijacks), kept so the idle watch,
// Revoke, Shutdown and the end of the handler can close it.
func (f *flushWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := http.NewResponseController(f.w).Hijack()
	if err != nil {
		return nil, nil, err
	}
	f.mu.Lock()
	f.conn = c
	up := f.upgrade
	f.mu.Unlock()
	if up != nil {
		f.untrack = f.p.track(c, up.rwc)
	}
	return c, rw, nil
}

// adopt makes f responsible for the upgraded connection of its request.
func (f *flushWriter) adopt(up *upgradeBody) {
	f.mu.Lock()
	f.upgrade = up
	f.mu.Unlock()
}

// closeConn closes the hijacked client connection, if any.
func (f *flushWriter) closeConn() {
	f.mu.Lock()
	c := f.conn
	f.mu.Unlock()
	if c != nil {
		_ = c.Close()
	}
}

// finish runs when goproxy is done with the request: goproxy returns once
// either side of a WebSocket ends and closes neither, so both are closed
// here (the other direction's copy then ends too) and the exchange ends.
func (f *flushWriter) finish() {
	f.mu.Lock()
	up := f.upgrade
	f.mu.Unlock()
	if up == nil {
		return
	}
	f.closeConn()
	_ = up.Close()
	if f.untrack != nil {
		f.untrack()
	}
}

type flushWriterKey struct{}
