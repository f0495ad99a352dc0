package proxy

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/egress"
)

// Rules of verdicts the proxy makes itself (egress has the policy's).
const (
	ruleMismatch    = "tunnel-mismatch" // an inner request names another host than the CONNECT
	ruleSNIMismatch = "sni-mismatch"    // a ClientHello names another host than the CONNECT
	ruleBadHello    = "malformed-client-hello"
	ruleNotProxy    = "malformed-request"
)

// spanName is the one span the gate records per proxied request or tunnel
// (C-GW-4, B-5).
const spanName = "egress_request"

// maxAttrLen clips client-chosen strings (method, unparsable host) before
// they reach a span or a log line.
const maxAttrLen = 256

// exchange is one proxied request or tunnel: the span, the verdict, the
// bytes each way and the credential ids used. finish records it once.
type exchange struct {
	p     *Proxy
	span  trace.Span
	start time.Time

	mu      sync.Mutex
	method  string
	address string
	port    int
	verdict egress.Verdict
	status  int
	ids     []string

	sent, recv atomic.Int64
	once       sync.Once
}

// begin starts the span of a request. A traceparent from the sandbox
// becomes a link, never the parent: the sandbox does not get to place the
// gate's spans in its trace (B-5).
func (p *Proxy) begin(r *http.Request) *exchange {
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient), trace.WithNewRoot()}
	linked := propagation.TraceContext{}.Extract(context.Background(), propagation.HeaderCarrier(r.Header))
	if sc := trace.SpanContextFromContext(linked); sc.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc}))
	}
	_, span := p.tracer.Start(context.Background(), spanName, opts...)
	return &exchange{p: p, span: span, start: time.Now(), method: domain.ClipTo(r.Method, maxAttrLen), verdict: egress.Verdict{Rule: ruleNotProxy}}
}

// decided records the target and the policy's verdict on it; raw is what
// the client named, used when it did not parse.
func (x *exchange) decided(t egress.Target, raw string, v egress.Verdict) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.verdict = v
	if t.Port != 0 {
		x.address, x.port = t.Host.String(), int(t.Port)
	} else {
		x.address = domain.ClipTo(raw, maxAttrLen)
	}
}

// floor refines an allowed verdict with the dial floor's: a refusal, or the
// entry that opened an internal address.
func (x *exchange) floor(v egress.Verdict) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if !v.Allowed || (v.Rule != "" && v.Rule != egress.RulePublic) {
		x.verdict = v
	}
}

func (x *exchange) deny(rule string) { x.floor(egress.Verdict{Rule: rule}) }

func (x *exchange) setStatus(code int) {
	x.mu.Lock()
	x.status = code
	x.mu.Unlock()
}

// used adds the ids of credentials substituted into the request.
func (x *exchange) used(ids []string) {
	if len(ids) == 0 {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, id := range ids {
		if !slices.Contains(x.ids, id) {
			x.ids = append(x.ids, id)
		}
	}
}

// respond answers with a fixed status; the span ends when goproxy closes
// the body, after the client has it.
func (x *exchange) respond(req *http.Request, status int, reason string) *http.Response {
	x.setStatus(status)
	resp := fixedResponse(req, status, reason)
	resp.Body = &respBody{Reader: resp.Body, closer: resp.Body, x: x}
	return resp
}

// write answers on w with a fixed status and ends the exchange.
func (x *exchange) write(w http.ResponseWriter, status int, reason string) {
	x.setStatus(status)
	writeStatus(w, status, reason)
	x.finish()
}

// finish ends the span and writes the log line, once. Every attribute is a
// method, a host, a port, a status, a rule, a count or a credential id:
// nothing a client sent in a header or body, and never a secret.
func (x *exchange) finish() {
	x.once.Do(func() {
		x.mu.Lock()
		defer x.mu.Unlock()
		verdict := "denied"
		if x.verdict.Allowed {
			verdict = "allowed"
		}
		attrs := []attribute.KeyValue{
			attribute.String("http.request.method", x.method),
			attribute.String("server.address", x.address),
			attribute.Int("server.port", x.port),
			attribute.Int("http.response.status_code", x.status),
			attribute.String("sandgate.verdict", verdict),
			attribute.String("sandgate.rule", x.verdict.Rule),
			attribute.Int64("sandgate.bytes_sent", x.sent.Load()),
			attribute.Int64("sandgate.bytes_received", x.recv.Load()),
			attribute.StringSlice("sandgate.credential_ids", x.ids),
			attribute.String("sandgate.session_id", x.p.opts.SessionID.String()),
		}
		x.span.SetAttributes(attrs...)
		if x.p.opts.Verdicts != nil {
			x.p.opts.Verdicts.Add(x.verdict.Allowed, x.verdict.Reason())
		}
		if x.status >= http.StatusInternalServerError {
			x.span.SetStatus(codes.Error, http.StatusText(x.status))
		}
		if x.p.log.Enabled(context.Background(), slog.LevelDebug) {
			x.p.log.LogAttrs(context.Background(), slog.LevelDebug, spanName,
				slog.String("method", x.method), slog.String("host", x.address), slog.Int("port", x.port),
				slog.Int("status", x.status), slog.String("verdict", verdict), slog.String("rule", x.verdict.Rule),
				slog.Int64("bytes_sent", x.sent.Load()), slog.Int64("bytes_received", x.recv.Load()),
				slog.Any("credential_ids", x.ids), slog.Duration("duration", time.Since(x.start)))
		}
		x.span.End()
	})
}

// counter counts the bytes read through it.
type counter struct {
	r io.Reader
	n *atomic.Int64
}

func (c counter) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n.Add(int64(n))
	return n, err
}

// reqBody is a request body on its way upstream, counted.
type reqBody struct {
	counter
	closer io.Closer
}

func (b reqBody) Close() error { return b.closer.Close() }

// respBody is the body a client gets: read through the counter (and the
// redactor); closing it closes the upstream body and ends the exchange.
// Trailers arrive with the end of the body and are redacted then. In an
// intercepted tunnel, out holds the client's writes between reads: each
// Read first writes what the last one produced, then reads upstream.
type respBody struct {
	io.Reader
	closer  io.Closer
	x       *exchange
	trailer http.Header
	redact  *egress.Replacer
	out     *tunnelConn
}

func (b *respBody) Read(p []byte) (int, error) {
	if b.out != nil {
		if err := b.out.hold(); err != nil {
			return 0, err
		}
	}
	n, err := b.Reader.Read(p)
	if err != nil && b.trailer != nil {
		replaceHeader(b.trailer, b.redact)
		dropSecretNames(b.trailer, b.redact)
		b.trailer = nil
	}
	return n, err
}

func (b *respBody) Close() error {
	if b.out != nil {
		_ = b.out.flush(false)
	}
	err := b.closer.Close()
	b.x.finish()
	return err
}

// upgradeBody is the connection a 101 response hands over (a WebSocket):
// goproxy relays it both ways; it counts both and ends the exchange on
// Close.
type upgradeBody struct {
	rwc  io.ReadWriteCloser
	x    *exchange
	idle *idleWatch // plain upgrades only; nil inside a tunnel
	once sync.Once
}

func (b *upgradeBody) Read(p []byte) (int, error) {
	n, err := b.rwc.Read(p)
	b.x.recv.Add(int64(n))
	b.touch(n)
	return n, err
}

func (b *upgradeBody) Write(p []byte) (int, error) {
	n, err := b.rwc.Write(p)
	b.x.sent.Add(int64(n))
	b.touch(n)
	return n, err
}

func (b *upgradeBody) touch(n int) {
	if n > 0 && b.idle != nil {
		b.idle.touch()
	}
}

func (b *upgradeBody) Close() error {
	var err error
	b.once.Do(func() {
		if b.idle != nil {
			b.idle.stop()
		}
		err = b.rwc.Close()
		b.x.finish()
	})
	return err
}
