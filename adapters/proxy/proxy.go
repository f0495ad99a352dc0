package proxy

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/elazarl/goproxy"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/sandgate/sandgate/adapters/proxy/ca"
	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/egress"
	"github.com/sandgate/sandgate/core/gatewire"
)

// Defaults of Options.
const (
	DefaultMaxTunnels    = 256
	DefaultDialTimeout   = 10 * time.Second
	DefaultHeaderTimeout = 10 * time.Second
	DefaultIdleTimeout   = 120 * time.Second
	// DefaultTunnelIdleTimeout is generous: an agent's tool may sit on an
	// open connection between steps, but not forever.
	DefaultTunnelIdleTimeout = 5 * time.Minute
)

// responseHeaderTimeout bounds the wait for an origin's response headers. It
// is generous on purpose: a non-streaming model completion may think for
// minutes before its first byte.
const responseHeaderTimeout = 10 * time.Minute

// ErrRevoked is returned by SetConfig after Revoke: a revoked gate never
// admits anything again.
var ErrRevoked = errors.New("proxy: gate token revoked")

// Options are the proxy's settings that no config may change.
type Options struct {
	// Deny are addresses never dialled: the gate's own and the control
	// plane's (egress.Options).
	Deny []netip.Prefix
	// Resolve resolves a host name once per dial; nil uses
	// net.DefaultResolver.LookupNetIP with network "ip".
	Resolve func(ctx context.Context, host string) ([]netip.Addr, error)
	// RootCAs verify upstream TLS; nil is the system pool.
	RootCAs *x509.CertPool
	// Tracer provides the egress_request spans; nil is the no-op provider.
	Tracer trace.TracerProvider
	// Logger gets one debug line per request; nil discards.
	Logger *slog.Logger
	// SessionID names the session in spans and in the CA's subject.
	SessionID domain.ID
	// Verdicts, when set, counts every request's verdict by its bounded
	// reason (egress.Verdict.Reason), for the gate's reports to the
	// control plane.
	Verdicts *gatewire.Tally
	// MaxTunnels caps concurrent CONNECT tunnels (default 256); a CONNECT
	// over it gets 429.
	MaxTunnels int
	// DialTimeout bounds resolution plus connect (and the upstream TLS
	// handshake); HeaderTimeout the read of a client's request headers;
	// IdleTimeout an idle keep-alive connection. Defaults 10 s, 10 s, 120 s.
	DialTimeout, HeaderTimeout, IdleTimeout time.Duration
	// TunnelIdleTimeout closes a CONNECT tunnel (opaque or intercepted) or
	// an upgraded connection (WebSocket) that moved no byte either way for
	// that long (default 5 min). An intercepted tunnel awaiting an origin's
	// response head is not idle. Every tunnel holds a slot of MaxTunnels, so
	// without it idle tunnels would end up refusing new ones.
	TunnelIdleTimeout time.Duration
}

// Proxy is the gate's egress proxy. It is an http.Handler; Serve runs it on
// a listener with the timeouts of Options.
type Proxy struct {
	opts     Options
	log      *slog.Logger
	tracer   trace.Tracer
	policy   atomic.Pointer[egress.Policy]
	tr       *http.Transport
	gp       *goproxy.ProxyHttpServer
	resolve  func(ctx context.Context, host string) ([]netip.Addr, error)
	dialAddr func(ctx context.Context, network, addr string) (net.Conn, error) // tests replace it
	slots    chan struct{}                                                     // one per live tunnel
	substs   chan struct{}                                                     // one per body substitution

	mu      sync.Mutex
	revoked bool
	ready   bool
	auth    *ca.Authority
	srv     *http.Server
	closed  bool
	tunnels map[io.Closer]struct{} // live tunnels' client connections
}

// New validates opts and builds a proxy that denies everything until the
// first good SetConfig.
func New(opts Options) (*Proxy, error) {
	if err := opts.SessionID.Required(); err != nil {
		return nil, fmt.Errorf("proxy: SessionID: %w", err)
	}
	for name, d := range map[string]*time.Duration{"DialTimeout": &opts.DialTimeout, "HeaderTimeout": &opts.HeaderTimeout, "IdleTimeout": &opts.IdleTimeout, "TunnelIdleTimeout": &opts.TunnelIdleTimeout} {
		if *d < 0 {
			return nil, fmt.Errorf("proxy: %s: negative duration %v", name, *d)
		}
	}
	if opts.MaxTunnels < 0 {
		return nil, fmt.Errorf("proxy: MaxTunnels: negative (%d)", opts.MaxTunnels)
	}
	for i, d := range opts.Deny {
		if !d.IsValid() {
			return nil, fmt.Errorf("proxy: Deny[%d]: invalid prefix", i)
		}
	}
	setDefaults(&opts)
	p := &Proxy{
		opts:    opts,
		log:     opts.Logger,
		tracer:  opts.Tracer.Tracer("github.com/sandgate/sandgate/adapters/proxy"),
		resolve: opts.Resolve,
		slots:   make(chan struct{}, opts.MaxTunnels),
		substs:  make(chan struct{}, maxSubstitutions),
		tunnels: map[io.Closer]struct{}{},
	}
	if p.resolve == nil {
		p.resolve = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	p.dialAddr = (&net.Dialer{KeepAlive: 30 * time.Second}).DialContext
	p.tr = p.newTransport()
	p.gp = p.newGoproxy()
	return p, nil
}

func setDefaults(o *Options) {
	if o.MaxTunnels == 0 {
		o.MaxTunnels = DefaultMaxTunnels
	}
	if o.DialTimeout == 0 {
		o.DialTimeout = DefaultDialTimeout
	}
	if o.HeaderTimeout == 0 {
		o.HeaderTimeout = DefaultHeaderTimeout
	}
	if o.IdleTimeout == 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.TunnelIdleTimeout == 0 {
		o.TunnelIdleTimeout = DefaultTunnelIdleTimeout
	}
	if o.Tracer == nil {
		o.Tracer = noop.NewTracerProvider()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// SetConfig compiles cfg (egress.Compile with Options.Deny) and swaps the
// policy atomically. An invalid config returns the error and keeps the last
// good one (C-GW-1). The first good config mints the interception CA from
// the union of all credentials' allowed_hosts patterns. After Revoke it
// returns ErrRevoked.
func (p *Proxy) SetConfig(cfg gatewire.Config) error {
	pol, err := egress.Compile(cfg, egress.Options{Deny: p.opts.Deny})
	if err != nil {
		return fmt.Errorf("proxy: config: %w", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.revoked {
		return ErrRevoked
	}
	if p.auth == nil {
		a, err := ca.New(p.opts.SessionID, pol.CredentialPatterns())
		if err != nil {
			return fmt.Errorf("proxy: interception CA: %w", err)
		}
		p.auth = a
	}
	p.policy.Store(pol)
	p.ready = true
	// Pooled upstream connections were checked against the old policy.
	p.tr.CloseIdleConnections()
	return nil
}

// Revoke denies everything from now on (the control plane answered 401):
// the policy becomes nil, live tunnels are closed and SetConfig is refused.
func (p *Proxy) Revoke() {
	p.mu.Lock()
	p.revoked, p.ready = true, false
	p.policy.Store(nil)
	p.mu.Unlock()
	p.closeTunnels()
	p.tr.CloseIdleConnections()
}

// Ready reports whether a good config is in force and the token is not
// revoked (B-3: the gate reports healthy only then).
func (p *Proxy) Ready() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ready
}

// CACertPEM returns the interception CA's certificate, or nil before the
// first good config.
func (p *Proxy) CACertPEM() []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.auth == nil {
		return nil
	}
	return p.auth.CertPEM()
}

// Serve answers proxy requests on ln until Shutdown, with the header-read
// and idle timeouts of Options and no write deadline (streams and tunnels
// may last). It returns nil after Shutdown.
func (p *Proxy) Serve(ln net.Listener) error {
	srv := &http.Server{
		Handler:           p,
		ReadHeaderTimeout: p.opts.HeaderTimeout,
		IdleTimeout:       p.opts.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(p.log.Handler(), slog.LevelDebug),
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return http.ErrServerClosed
	}
	p.srv = srv
	p.mu.Unlock()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("proxy: serve: %w", err)
	}
	return nil
}

// Shutdown stops accepting, waits (up to ctx) for in-flight plain requests,
// then closes every tunnel and idle upstream connection.
func (p *Proxy) Shutdown(ctx context.Context) error {
	p.mu.Lock()
	p.closed = true
	srv := p.srv
	p.mu.Unlock()
	var err error
	if srv != nil {
		err = srv.Shutdown(ctx)
	}
	p.closeTunnels()
	p.tr.CloseIdleConnections()
	if err != nil {
		return fmt.Errorf("proxy: shutdown: %w", err)
	}
	return nil
}

// ServeHTTP is the proxy's handler: CONNECT opens a tunnel, an absolute URI
// is proxied, and any other request is local: GET /healthz answers 200 "ok"
// when Ready and 503 otherwise, everything else 404.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodConnect:
		p.serveConnect(w, r)
	case r.URL.IsAbs():
		fw := &flushWriter{w: w, p: p}
		p.gp.ServeHTTP(fw, r.WithContext(context.WithValue(r.Context(), flushWriterKey{}, fw)))
		fw.finish()
	default:
		p.serveLocal(w, r)
	}
}

func (p *Proxy) serveLocal(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/healthz" {
		writeStatus(w, http.StatusNotFound, reasonNotFound)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		writeStatus(w, http.StatusMethodNotAllowed, reasonMethod)
		return
	}
	if !p.Ready() {
		writeStatus(w, http.StatusServiceUnavailable, reasonNotReady)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.WriteString(w, "ok")
}
