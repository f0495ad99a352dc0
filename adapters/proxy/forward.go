package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/elazarl/goproxy"

	"github.com/sandgate/sandgate/core/egress"
	"github.com/sandgate/sandgate/core/gatewire"
)

// onRequest is goproxy's one request handler. It answers every proxied
// request itself — plain, or inside an intercepted tunnel (ctx.UserData is
// then the *tunnel) — so goproxy never round-trips on its own and never
// sees an error it could print.
func (p *Proxy) onRequest(req *http.Request, ctx *goproxy.ProxyCtx) (*http.Request, *http.Response) {
	tun, _ := ctx.UserData.(*tunnel)
	if tun == nil {
		return req, p.forward(req, tun)
	}
	tun.conn.requestRead()
	tun.conn.idle.begin()
	resp := p.forward(req, tun)
	tun.conn.idle.end()
	if resp.StatusCode != http.StatusSwitchingProtocols {
		// goproxy closes the body once the response is written; a
		// WebSocket ends the tunnel's request loop instead.
		resp.Body = &answerBody{ReadCloser: resp.Body, req: req.Body, conn: tun.conn}
	}
	return req, resp
}

// answerBody ends the answer to a request inside a tunnel when goproxy
// closes it: the next request head is counted from then on. The request's
// body is closed first (net/http drains what is unread, as goproxy's own
// Close right after would), so its bytes do not count as a head.
type answerBody struct {
	io.ReadCloser
	req  io.Closer
	conn *tunnelConn
}

func (b *answerBody) Close() error {
	err := b.ReadCloser.Close()
	if b.req != nil {
		_ = b.req.Close()
	}
	b.conn.answered()
	return err
}

// forward decides on req, substitutes, sends it upstream and returns the
// response for the client: always a response, with a fixed status when
// anything failed.
func (p *Proxy) forward(req *http.Request, tun *tunnel) *http.Response {
	x := p.begin(req)
	scheme, raw, ok := requestTarget(req, tun)
	if !ok {
		status, reason := http.StatusBadRequest, reasonBadRequest
		if tun != nil {
			status, reason = http.StatusForbidden, reasonMismatch
			x.deny(ruleMismatch)
		}
		resp := x.respond(req, status, reason)
		resp.Close = true // the client broke the protocol: end the connection
		return resp
	}
	pol := p.policy.Load()
	t, v := pol.AdmitTarget(raw)
	x.decided(t, raw, v)
	if !v.Allowed {
		return x.respond(req, http.StatusForbidden, reasonDenied)
	}
	bound := pol.Credentials(t)
	if isWebSocket(req.Header) && !bound.Redactor().Empty() {
		// The frames after a 101 are outside echo redaction (a secret
		// could come back in one), so a WebSocket to a host with bound
		// credentials is refused before the origin sees it.
		return x.respond(req, http.StatusForbidden, reasonUpgradeBound)
	}
	out, err := p.outbound(req, scheme, t, bound, x)
	if err != nil {
		status, reason, _, _ := failure(err)
		if status == http.StatusBadGateway {
			status, reason = http.StatusBadRequest, reasonBadRequest // the client's body failed, not the upstream
		}
		resp := x.respond(req, status, reason)
		resp.Close = true
		return resp
	}
	resp, err := p.tr.RoundTrip(out)
	if err != nil {
		status, reason, dv, denied := failure(err)
		if denied {
			x.floor(dv)
		}
		return x.respond(req, status, reason)
	}
	return p.inbound(req, resp, bound, x, tun)
}

// requestTarget returns the scheme and the host:port a request is decided
// on: the absolute URI of a plain proxy request (never its Host header), or
// inside an intercepted tunnel the CONNECT authority — after checking that
// the request's Host and URL name exactly that authority (B-1).
func requestTarget(req *http.Request, tun *tunnel) (scheme, target string, ok bool) {
	scheme = req.URL.Scheme
	if scheme != "http" && scheme != "https" {
		return "", "", false
	}
	if tun == nil {
		hp, ok := withPort(req.URL.Host, scheme)
		return scheme, hp, ok
	}
	for _, h := range []string{req.Host, req.URL.Host} {
		hp, ok := withPort(h, scheme)
		if !ok {
			return "", "", false
		}
		if t, err := egress.ParseTarget(hp); err != nil || t != tun.target {
			return "", "", false
		}
	}
	return scheme, hostport(tun.target), true
}

// withPort adds the scheme's default port to a URL host that has none.
func withPort(host, scheme string) (string, bool) {
	if host == "" {
		return "", false
	}
	if _, _, err := net.SplitHostPort(host); err == nil {
		return host, true
	}
	h := host
	if len(h) > 1 && h[0] == '[' && h[len(h)-1] == ']' {
		h = h[1 : len(h)-1]
	}
	return net.JoinHostPort(h, defaultPort(scheme)), true
}

func defaultPort(scheme string) string {
	if scheme == "https" {
		return "443"
	}
	return "80"
}

// urlHost spells t for the upstream URL and Host header: canonical host,
// brackets for IPv6, the port only when it is not the scheme's default.
func urlHost(t egress.Target, scheme string) string {
	h := t.Host.String()
	if t.Host.IsIP() && t.Host.Addr.Is6() {
		h = "[" + h + "]"
	}
	if p := strconv.Itoa(int(t.Port)); p != defaultPort(scheme) {
		h += ":" + p
	}
	return h
}

// outbound builds the upstream request: cleaned headers with the bound
// credentials' placeholders substituted, the body substituted (≤ 10 MiB)
// when a bound credential is enabled for it, else streamed untouched. The
// URI is not substituted (see the package doc). A GotConn hook re-checks
// the floor on the connection actually used, and closes a pooled
// connection to an address the current policy refuses before anything is
// written to it.
func (p *Proxy) outbound(req *http.Request, scheme string, t egress.Target, bound egress.Bound, x *exchange) (*http.Request, error) {
	h, _ := cleanHeader(req.Header)
	x.used(replaceHeader(h, bound.Substituter(gatewire.LocationHeaders)))
	if !bound.Redactor().Empty() {
		// The redactor sees only whole, unencoded bodies: a compressed
		// or partial echo of a secret would slip past it.
		h.Del("Accept-Encoding")
		h.Del("Range")
	}
	body, length, err := p.body(req, bound, x)
	if err != nil {
		return nil, err
	}
	// cancel is released with req's context, which ends with the exchange.
	ctx, cancel := context.WithCancel(req.Context())
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
		if ap, err := netip.ParseAddrPort(info.Conn.RemoteAddr().String()); err == nil {
			v := p.policy.Load().AdmitAddr(ap)
			x.floor(v)
			if !v.Allowed {
				// cancel alone races with the request's write on a
				// reused connection: closing it here, before the
				// transport writes, means nothing reaches it.
				_ = info.Conn.Close()
				cancel()
			}
		}
	}})
	host := urlHost(t, scheme)
	out := (&http.Request{
		Method:        req.Method,
		URL:           &url.URL{Scheme: scheme, Host: host, Path: req.URL.Path, RawPath: req.URL.RawPath, RawQuery: req.URL.RawQuery, ForceQuery: req.URL.ForceQuery},
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          body,
		ContentLength: length,
		Host:          host,
	}).WithContext(ctx)
	return out, nil
}

// body returns the upstream request body and its length (-1 unknown).
func (p *Proxy) body(req *http.Request, bound egress.Bound, x *exchange) (io.ReadCloser, int64, error) {
	if req.Body == nil || req.Body == http.NoBody || req.ContentLength == 0 {
		return http.NoBody, 0, nil
	}
	sub := bound.Substituter(gatewire.LocationBody)
	if sub.Empty() {
		return reqBody{counter: counter{r: req.Body, n: &x.sent}, closer: req.Body}, req.ContentLength, nil
	}
	if req.ContentLength > egress.MaxBodyBytes {
		return nil, 0, fmt.Errorf("%w: content-length %d", egress.ErrBodyTooLarge, req.ContentLength)
	}
	// Each substitution holds up to twice MaxBodyBytes until the body is
	// sent: a few at a time, so concurrent requests cannot exhaust memory.
	select {
	case p.substs <- struct{}{}:
	default:
		return nil, 0, errSubstBusy
	}
	data, ids, err := egress.SubstituteBody(sub, req.Body)
	if err != nil {
		<-p.substs
		return nil, 0, err
	}
	x.used(ids)
	x.sent.Add(int64(len(data)))
	return &substBody{Reader: bytes.NewReader(data), release: func() { <-p.substs }}, int64(len(data)), nil
}

// maxSubstitutions bounds the request bodies substituted at once.
const maxSubstitutions = 8

var errSubstBusy = errors.New("too many body substitutions at once")

// substBody is a substituted request body; closing it (the transport
// always does) frees its substitution slot, once.
type substBody struct {
	io.Reader
	once    sync.Once
	release func()
}

func (b *substBody) Close() error {
	b.once.Do(b.release)
	return nil
}

// inbound turns the upstream response into the client's: hop-by-hop and
// Proxy-* headers gone, bound secrets redacted from header values, body and
// trailers (streaming, so SSE keeps flowing), the byte count kept, and the
// exchange ended when the body is closed. A 101 is relayed only for a
// WebSocket. Inside a tunnel, the body holds the client's writes while it
// streams (tunnelConn).
func (p *Proxy) inbound(req *http.Request, resp *http.Response, bound egress.Bound, x *exchange, tun *tunnel) *http.Response {
	x.setStatus(resp.StatusCode)
	h, websocket := cleanHeader(resp.Header)
	redact := bound.Redactor()
	replaceHeader(h, redact)
	resp.Header = h
	if !redact.Empty() {
		// The reason phrase is the origin's free text, relayed as is
		// inside a tunnel: the standard one replaces it.
		resp.Status = strconv.Itoa(resp.StatusCode) + " " + http.StatusText(resp.StatusCode)
		dropSecretNames(h, redact)
	}
	if resp.StatusCode == http.StatusSwitchingProtocols {
		rwc, ok := resp.Body.(io.ReadWriteCloser)
		if !ok || !websocket || !redact.Empty() {
			_ = resp.Body.Close()
			return x.respond(req, http.StatusBadGateway, reasonUnsupportedUp)
		}
		up := &upgradeBody{rwc: rwc, x: x}
		if fw, ok := req.Context().Value(flushWriterKey{}).(*flushWriter); ok && tun == nil {
			// A plain upgrade: its own idle watch (a tunnel's covers an
			// intercepted one).
			up.idle = watchIdle(p.opts.TunnelIdleTimeout, func() { _ = rwc.Close(); fw.closeConn() })
			fw.adopt(up)
		}
		resp.Body = up
		return resp
	}
	if !redact.Empty() && encoded(resp.Header) {
		_ = resp.Body.Close()
		return x.respond(req, http.StatusBadGateway, reasonEncoded)
	}
	var r io.Reader = counter{r: resp.Body, n: &x.recv}
	if !redact.Empty() {
		r = redact.Reader(r)
		resp.ContentLength = -1
		resp.Header.Del("Content-Length")
	}
	resp.Body = &respBody{Reader: r, closer: resp.Body, x: x, trailer: resp.Trailer, redact: redact}
	if tun != nil {
		resp.Body.(*respBody).out = tun.conn
	}
	return resp
}

// encoded reports whether h names a Content-Encoding other than identity.
func encoded(h http.Header) bool {
	for _, v := range h.Values("Content-Encoding") {
		for c := range strings.SplitSeq(v, ",") {
			if c = strings.TrimSpace(c); c != "" && !strings.EqualFold(c, "identity") {
				return true
			}
		}
	}
	return false
}
