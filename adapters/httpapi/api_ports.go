package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/core/session"
)

// Port forwarding's operations, the suffix of …/ports/{port}.
const (
	opConnect = ":connect"
	opSign    = ":sign"
)

// CodeTooManyStreams: the session has as many long-lived streams as it
// may (APIOptions.MaxStreams; 429).
const CodeTooManyStreams = "too_many_streams"

// ErrTooManyStreams is 429 "too_many_streams".
var ErrTooManyStreams = errors.New("too many streams into the session")

// portAPI serves the port routes:
//
//	GET  /v1/sessions/{id}/ports/{port}:connect  WebSocket bridged to the port (binary messages)
//	POST /v1/sessions/{id}/ports/{port}:sign     {ttl_seconds} → {url, path, expires_at}
//	ANY  /v1/sessions/{id}/ports/{port}/{path…}  reverse proxy to the port (API token or signed URL)
type portAPI struct {
	*api
	// signer is resolved on first use: the handler is built before the
	// executor starts, and the key may only exist once it has.
	signer func() *urlSigner
	conns  *streamCap
	idle   time.Duration
	now    func() time.Time
}

// portRoutes adds the port routes to mux.
func (a *api) portRoutes(mux *http.ServeMux) {
	p := &portAPI{api: a, conns: a.streams, idle: a.opts.PortIdleTimeout, now: time.Now}
	if p.idle <= 0 {
		p.idle = DefaultPortIdleTimeout
	}
	p.signer = sync.OnceValue(func() *urlSigner {
		if a.opts.SecretKey == nil {
			return nil
		}
		return newURLSigner(a.opts.SecretKey())
	})
	mux.Handle("GET /v1/sessions/{id}/ports/{op}", p.slash(a.authed(p.connect)))
	mux.Handle("POST /v1/sessions/{id}/ports/{op}", a.authed(p.sign))
	mux.HandleFunc("/v1/sessions/{id}/ports/{port}/{path...}", p.preview)
}

// slash redirects …/ports/{port} (no operation) to the preview's root,
// …/ports/{port}/, as a browser given the bare address expects; the
// redirect reveals nothing, so it needs no credential (the query, a
// signature with it, is kept).
func (p *portAPI) slash(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.PathValue("op"), ":") {
			next.ServeHTTP(w, r)
			return
		}
		u := *r.URL
		u.Path += "/"
		u.RawPath = ""
		http.Redirect(w, r, u.RequestURI(), http.StatusPermanentRedirect)
	})
}

// target parses the session id and the port of the path; op is what must
// follow the port in the {op} segment ("" for the preview's {port}).
func target(r *http.Request, segment, op string) (domain.ID, int, error) {
	sid, err := sessionID(r)
	if err != nil {
		return domain.ID{}, 0, err
	}
	raw, ok := strings.CutSuffix(r.PathValue(segment), op)
	port, perr := strconv.Atoi(raw)
	if !ok || perr != nil {
		return domain.ID{}, 0, fmt.Errorf("%w: port: %q is not a port", session.ErrInvalidRequest, domain.Clip(r.PathValue(segment)))
	}
	if err := sandbox.CheckPort(port); err != nil {
		return domain.ID{}, 0, fmt.Errorf("%w: %w", session.ErrInvalidRequest, err)
	}
	return sid, port, nil
}

// dial takes a slot of the session and connects to the port; the
// connection gives the slot back when closed, and closes itself when idle.
func (p *portAPI) dial(ctx context.Context, sid domain.ID, port int) (net.Conn, error) {
	if !p.conns.acquire(sid) {
		return nil, fmt.Errorf("session %s: %w (at most %d)", sid, ErrTooManyStreams, p.conns.max)
	}
	conn, err := p.svc.DialPort(ctx, sid, port)
	if err != nil {
		p.conns.release(sid)
		return nil, err
	}
	var once sync.Once
	return &releasing{idleConn: newIdleConn(conn, p.idle), release: func() { once.Do(func() { p.conns.release(sid) }) }}, nil
}

// releasing gives its session's slot back when closed.
type releasing struct {
	*idleConn
	release func()
}

func (c *releasing) Close() error {
	defer c.release()
	return c.idleConn.Close()
}

// connect serves …/ports/{port}:connect: the port's connection, dialled
// before the upgrade (a refusal is an ordinary error answer), bridged to
// the WebSocket's binary messages until either side ends. A WebSocket has
// no half-close: either end closes both.
func (p *portAPI) connect(w http.ResponseWriter, r *http.Request) {
	sid, port, err := target(r, "op", opConnect)
	if err != nil {
		p.fail(w, r, err)
		return
	}
	conn, err := p.dial(r.Context(), sid, port)
	if err != nil {
		p.fail(w, r, err)
		return
	}
	defer func() { _ = conn.Close() }()
	// The API token authenticates the caller, never a browser's ambient
	// credentials: any origin may connect with it.
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		return // Accept answered the handshake's fault
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	defer cancel()
	// The WebSocket is closed with its handshake, not the NetConn's Close:
	// that first cancels the read in flight, which drops the connection
	// before the close frame is through.
	bridge(websocket.NetConn(ctx, ws, websocket.MessageBinary), conn,
		func() { _ = ws.Close(websocket.StatusNormalClosure, "") })
}

// bridge copies both ways between ws and conn until either direction
// ends, then closes both (closeWS the first), so the other copy ends too.
func bridge(ws, conn net.Conn, closeWS func()) {
	var once sync.Once
	closeBoth := func() { once.Do(func() { closeWS(); _ = conn.Close() }) }
	var wg sync.WaitGroup
	wg.Add(2)
	for _, dir := range [][2]net.Conn{{ws, conn}, {conn, ws}} {
		go func() {
			defer wg.Done()
			_, _ = io.Copy(dir[0], dir[1])
			closeBoth()
		}()
	}
	wg.Wait()
}

// signRequest is the body of …:sign (optional).
type signRequest struct {
	TTLSeconds int64 `json:"ttl_seconds,omitempty"`
}

// SignResponse is …:sign's answer: URL is absolute as this request reached
// the executor; Path is the same without scheme and host, for a caller
// that knows the executor by another address.
type SignResponse struct {
	URL       string    `json:"url"`
	Path      string    `json:"path"`
	ExpiresAt time.Time `json:"expires_at"`
}

// sign serves …/ports/{port}:sign.
func (p *portAPI) sign(w http.ResponseWriter, r *http.Request) {
	sid, port, err := target(r, "op", opSign)
	var req signRequest
	if err == nil && r.ContentLength != 0 {
		err = decodeJSON(w, r, &req)
	}
	ttl := time.Duration(req.TTLSeconds) * time.Second
	switch {
	case err != nil:
	case req.TTLSeconds == 0:
		ttl = DefaultSignTTL
	case req.TTLSeconds < 0 || ttl > MaxSignTTL:
		err = fmt.Errorf("%w: ttl_seconds: must be 1 to %d, got %d", session.ErrInvalidRequest, int64(MaxSignTTL/time.Second), req.TTLSeconds)
	}
	signer := p.signer()
	if err == nil && signer == nil {
		err = fmt.Errorf("signed URLs need the executor's secret key: %w", errNoSigning)
	}
	if err == nil {
		_, err = p.svc.Get(r.Context(), sid) // no URL for a session that is not running
	}
	if err != nil {
		p.fail(w, r, err)
		return
	}
	exp := p.now().Add(ttl).Truncate(time.Second)
	path := previewPrefix(sid, port) + "/?" + sigParam + "=" + signer.sign(sid, port, exp)
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	p.reply(w, r, SignResponse{URL: scheme + "://" + r.Host + path, Path: path, ExpiresAt: exp.UTC()}, nil)
}

// errNoSigning: the handler has no secret key (APIOptions.SecretKey).
var errNoSigning = errors.New("signing is not configured")

func previewPrefix(sid domain.ID, port int) string {
	return "/v1/sessions/" + sid.String() + "/ports/" + strconv.Itoa(port)
}
