package proxy

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"sync"

	"github.com/sandgate/sandgate/core/egress"
)

// serveConnect decides on a CONNECT authority (C-GW-2), takes a tunnel slot
// (C-GW-6) and opens an opaque tunnel, or an intercepted one when the
// authority carries bound credentials (B-1).
func (p *Proxy) serveConnect(w http.ResponseWriter, r *http.Request) {
	x := p.begin(r)
	pol := p.policy.Load()
	t, v := pol.AdmitTarget(r.URL.Host)
	x.decided(t, r.URL.Host, v)
	if !v.Allowed {
		x.write(w, http.StatusForbidden, reasonDenied)
		return
	}
	select {
	case p.slots <- struct{}{}:
	default:
		x.write(w, http.StatusTooManyRequests, reasonTunnelLimit)
		return
	}
	if bound := pol.Credentials(t); !bound.Empty() {
		p.intercept(w, r, t, x)
		return
	}
	p.opaque(w, r, pol, t, x)
}

func (p *Proxy) release() { <-p.slots }

// opaque dials the checked address and relays bytes both ways until both
// sides are done. The relay runs on the handler's goroutine: the connection
// is hijacked, so the server no longer waits for it.
func (p *Proxy) opaque(w http.ResponseWriter, r *http.Request, pol *egress.Policy, t egress.Target, x *exchange) {
	release := sync.OnceFunc(p.release)
	defer release()
	up, fv, err := p.dial(r.Context(), pol, t)
	if err != nil {
		status, reason, dv, denied := failure(err)
		if denied {
			x.floor(dv)
		}
		x.write(w, status, reason)
		return
	}
	x.floor(fv)
	client, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		_ = up.Close()
		x.write(w, http.StatusInternalServerError, reasonUpstream)
		return
	}
	// The slot is free before the exchange ends, as in intercept: whoever
	// sees the tunnel's span end may open the next one.
	defer func() { release(); x.finish() }()
	untrack := p.track(client, up)
	defer untrack()
	defer func() { _, _ = client.Close(), up.Close() }()
	if _, err := io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	x.setStatus(http.StatusOK)
	idle := watchIdle(p.opts.TunnelIdleTimeout, func() { _, _ = client.Close(), up.Close() })
	defer idle.stop()
	p.relay(idleConn{client, idle}, buffered(brw.Reader), idleConn{up, idle}, t, x)
}

// buffered returns the client's bytes the server's reader had buffered past
// the CONNECT request (a client may send its ClientHello in the same
// write); they come before anything read from the connection itself.
func buffered(br *bufio.Reader) *bytes.Reader {
	if br == nil || br.Buffered() == 0 {
		return bytes.NewReader(nil)
	}
	b, _ := br.Peek(br.Buffered())
	return bytes.NewReader(bytes.Clone(b))
}

// relay copies upstream→client at once (server-first protocols work) and
// client→upstream after checking the first bytes (pre, then the
// connection): a TLS ClientHello must name the authority's host in its SNI,
// if it names one. A side that ends cleanly half-closes the other, so each
// direction drains; an error closes both.
func (p *Proxy) relay(client net.Conn, pre *bytes.Reader, up net.Conn, t egress.Target, x *exchange) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		n, err := copyConn(client, up)
		x.recv.Add(n)
		endWrite(client, err, up)
	}()
	n, rule, err := p.checkAndCopy(up, pre, client, t)
	x.sent.Add(n)
	if rule != "" {
		x.deny(rule)
		_, _ = client.Close(), up.Close()
	} else {
		endWrite(up, err, client)
	}
	<-done
}

// endWrite half-closes dst after a clean copy into it, or closes both on an
// error so the other direction stops too.
func endWrite(dst net.Conn, err error, other net.Conn) {
	if cw, ok := dst.(interface{ CloseWrite() error }); ok && err == nil {
		_ = cw.CloseWrite()
		return
	}
	_, _ = dst.Close(), other.Close()
}

// track registers a tunnel's connections so Revoke and Shutdown can close
// them; the returned func unregisters them. A tunnel registered after
// either (it was still dialling or being set up) is closed at once.
// Closing happens outside p.mu: a tunnel's Close unregisters itself.
func (p *Proxy) track(conns ...io.Closer) func() {
	p.mu.Lock()
	closed := p.closed || p.revoked
	for _, c := range conns {
		p.tunnels[c] = struct{}{}
	}
	p.mu.Unlock()
	if closed {
		for _, c := range conns {
			_ = c.Close()
		}
	}
	return func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, c := range conns {
			delete(p.tunnels, c)
		}
	}
}

func (p *Proxy) closeTunnels() {
	p.mu.Lock()
	conns := make([]io.Closer, 0, len(p.tunnels))
	for c := range p.tunnels {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
}
