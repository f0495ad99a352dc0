package httpapi

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/core/session"
	"github.com/sandgate/sandgate/core/strictjson"
	"github.com/sandgate/sandgate/ports"
)

// Defaults of APIOptions' limits.
const (
	// DefaultMaxBatchBytes bounds the file bytes of one files:batch; the
	// batch is held in memory while it is written.
	DefaultMaxBatchBytes = 64 << 20
	// DefaultMaxBatchFiles bounds the members of one files:batch.
	DefaultMaxBatchFiles = 10000
	// DefaultMaxStreamBytes bounds one streamed file read or write: the
	// 500 MB of docs/DESIGN.md.
	DefaultMaxStreamBytes = 500 << 20
)

// maxJSONBytes bounds a JSON request body: a session's 256 credentials of at
// most 8 KiB each and 1 MiB of env fit with room to spare.
const maxJSONBytes = 4 << 20

// maxTimeout bounds an exec's timeout_ms so the conversion cannot overflow.
const maxTimeout = 7 * 24 * time.Hour

// APIOptions configures NewAPIHandler. Zero limits take the defaults.
type APIOptions struct {
	// Token is the bearer token every /v1 request must carry. Empty leaves
	// the API open; refusing to listen beyond loopback without one is the
	// server's job.
	Token string
	// Logger receives one line per failed request (nil discards).
	Logger         *slog.Logger
	MaxBatchBytes  int64
	MaxBatchFiles  int
	MaxStreamBytes int64
	// Bodies bounds the request bodies read at once and how long one may
	// stall; share one with the server's other handlers (nil: a guard of
	// the handler's own, with the defaults).
	Bodies *BodyGuard
	// Refusals samples the log lines of requests refused for their token
	// (nil: a sampler of the handler's own, with the defaults).
	Refusals *RefusalSampler
	// BatchBudget bounds the bytes every files:batch in flight holds in
	// memory together (nil: a budget of the handler's own, of
	// DefaultBatchBudget bytes).
	BatchBudget *Budget
	// StreamStallTimeout fails a streamed answer (exec:stream) whose client
	// has taken nothing for that long, cancelling its exec (0:
	// DefaultBodyIdleTimeout, the same patience as for a request body).
	StreamStallTimeout time.Duration
	// MaxStreams bounds the long-lived streams into one session at once
	// (≤ 0: DefaultMaxStreams): forwarded connections, streamed execs,
	// followed proc outputs, attaches. PortIdleTimeout closes a forwarded
	// connection idle that long (≤ 0: DefaultPortIdleTimeout).
	MaxStreams      int
	PortIdleTimeout time.Duration
	// SecretKey returns the executor's secret key (the one sealing stored
	// secrets), from which the key signing preview URLs is derived; it is
	// called once, on the first request that signs or checks a signature
	// (the handler is built before the executor starts). Nil, or nil
	// returned: :sign answers 501 and previews take the API token alone.
	SecretKey func() []byte
}

func (o APIOptions) withDefaults() APIOptions {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.MaxBatchBytes <= 0 {
		o.MaxBatchBytes = DefaultMaxBatchBytes
	}
	if o.MaxBatchFiles <= 0 {
		o.MaxBatchFiles = DefaultMaxBatchFiles
	}
	if o.MaxStreamBytes <= 0 {
		o.MaxStreamBytes = DefaultMaxStreamBytes
	}
	if o.Bodies == nil {
		o.Bodies = NewBodyGuard(0, 0)
	}
	if o.Refusals == nil {
		o.Refusals = NewRefusalSampler(0, 0)
	}
	if o.MaxStreams <= 0 {
		o.MaxStreams = DefaultMaxStreams
	}
	if o.StreamStallTimeout <= 0 {
		o.StreamStallTimeout = DefaultBodyIdleTimeout
	}
	if o.BatchBudget == nil {
		o.BatchBudget = NewBudget(DefaultBatchBudget)
	}
	return o
}

// msgNoSuchEndpoint is the message of a path no route serves: how a client
// tells an older executor (exec:stream unknown) from an unknown session.
const msgNoSuchEndpoint = "no such endpoint"

// api serves the executor's /v1 endpoints over a ports.Service.
type api struct {
	svc  ports.Service
	opts APIOptions
	log  *slog.Logger
	// tokenSum is the SHA-256 of the API token: requests are compared by
	// digest, in constant time, so neither content nor length leaks.
	tokenSum [sha256.Size]byte
	// streams counts each session's long-lived streams (MaxStreams).
	streams *streamCap
}

// NewAPIHandler returns the handler of the executor API (docs/DESIGN.md):
//
//	PUT|GET|DELETE /v1/sessions/{id}    provision, attach, reap (?checkpoint=)
//	GET  /v1/sessions                   owned sessions with their state
//	POST /v1/sessions/{id}/exec         {command, timeout_ms} → exec result
//	POST /v1/sessions/{id}/exec:stream  the same, answered as NDJSON while it runs
//	GET  /v1/sessions/{id}/files?path=  stream a file out (Content-Length = size; &max_bytes=)
//	PUT  /v1/sessions/{id}/files?path=  stream a file in (Content-Length required)
//	POST /v1/sessions/{id}/files:batch  write a tar of files (?root= for relative names)
//	DELETE /v1/sessions/{id}/files?path= remove (&recursive=true for a tree)
//	GET  /v1/sessions/{id}/files:stat?path= describe a path (lstat: symlinks not followed)
//	GET  /v1/sessions/{id}/files:list?path= a directory's entries, sorted by name
//	POST /v1/sessions/{id}/files:mkdir?path= make a directory 0755 (&parents=true)
//	GET  /v1/sessions/{id}/export?root= a tar of root
//
// Every /v1 request needs `Authorization: Bearer <Token>` unless Token is
// empty. Errors are {"error":{"code","message"}} with the codes of
// docs/DESIGN.md; a failure no sentinel classifies is 500 "internal" with a fixed
// message, its cause logged. Every other path is 404 "not_found".
func NewAPIHandler(svc ports.Service, opts APIOptions) http.Handler {
	opts = opts.withDefaults()
	a := &api{svc: svc, opts: opts, log: opts.Logger, tokenSum: sha256.Sum256([]byte(opts.Token)),
		streams: &streamCap{max: opts.MaxStreams, n: map[domain.ID]int{}}}
	mux := http.NewServeMux()
	routes := a.routes()
	allowed := map[string][]string{}
	for _, r := range routes {
		mux.Handle(r.pattern, a.authed(r.h))
		method, path, _ := strings.Cut(r.pattern, " ")
		allowed[path] = append(allowed[path], method)
	}
	// A method-less pattern for each path answers the other methods in the
	// API's error shape (the mux's own 405 is plain text).
	for path, methods := range allowed {
		allow := strings.Join(methods, ", ")
		mux.Handle(path, a.authed(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Allow", allow)
			writeError(w, http.StatusMethodNotAllowed, CodeMethodNotAllowed, "allowed: "+allow)
		}))
	}
	notFound := func(w http.ResponseWriter, _ *http.Request) {
		writeError(w, http.StatusNotFound, CodeNotFound, msgNoSuchEndpoint)
	}
	a.portRoutes(mux)
	mux.Handle("/v1/", a.authed(notFound))
	mux.HandleFunc("/", notFound)
	return opts.Bodies.Wrap(mux)
}

// routes are the API's patterns and handlers.
func (a *api) routes() []route {
	routes := []route{
		{"PUT /v1/sessions/{id}", a.provision},
		{"GET /v1/sessions/{id}", a.get},
		{"DELETE /v1/sessions/{id}", a.delete},
		{"GET /v1/sessions", a.list},
		{"POST /v1/sessions/{id}/exec", a.exec},
		{"POST /v1/sessions/{id}/exec:stream", a.execStream},
		{"GET /v1/sessions/{id}/files", a.readFile},
		{"PUT /v1/sessions/{id}/files", a.writeFile},
		{"POST /v1/sessions/{id}/files:batch", a.writeBatch},
		{"DELETE /v1/sessions/{id}/files", a.remove},
		{"GET /v1/sessions/{id}/files:stat", a.stat},
		{"GET /v1/sessions/{id}/files:list", a.listDir},
		{"POST /v1/sessions/{id}/files:mkdir", a.mkdir},
		{"GET /v1/sessions/{id}/export", a.export},
	}
	return append(routes, a.procRoutes()...)
}

// Routes lists the API's route patterns ("POST /v1/sessions/{id}/exec"),
// for a check that its description covers them all.
func Routes() []string {
	var out []string
	for _, r := range (&api{}).routes() {
		out = append(out, r.pattern)
	}
	return out
}

// route is one pattern of the API and its handler.
type route struct {
	pattern string
	h       http.HandlerFunc
}

// authed requires the API token, when one is configured.
func (a *api) authed(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a.opts.Token != "" && !a.authorized(r.Header) {
			if ok, n := a.opts.Refusals.Allow(); ok {
				a.log.WarnContext(r.Context(), "api request refused", "reason", "missing or wrong API token",
					"method", r.Method, "path", domain.Clip(r.URL.Path), "remote", r.RemoteAddr, "suppressed", n)
			}
			w.Header().Set("WWW-Authenticate", bearerScheme)
			writeError(w, http.StatusUnauthorized, CodeUnauthorized, "a valid API token is required")
			return
		}
		h(w, r)
	})
}

// authorized reports whether the one Authorization header is "Bearer
// <Token>" (the scheme case-insensitive).
func (a *api) authorized(h http.Header) bool {
	vals := h.Values("Authorization")
	if len(vals) != 1 {
		return false
	}
	scheme, tok, ok := strings.Cut(vals[0], " ")
	if !ok || !strings.EqualFold(scheme, bearerScheme) {
		return false
	}
	sum := sha256.Sum256([]byte(tok))
	return subtle.ConstantTimeCompare(sum[:], a.tokenSum[:]) == 1
}

// fail answers err: its class's status and code, or 500 with the cause
// logged. The session id is in every line; the error texts of the ports
// carry no secret.
func (a *api) fail(w http.ResponseWriter, r *http.Request, err error) {
	cause := err
	if berr := bodyFailure(r); berr != nil {
		// The body failed under the service, which may have made any error
		// of the short read it was handed: the body's failure is the
		// answer, the service's error stays in the log.
		err = berr
	}
	status, code, msg := a.classifyLogged(r, err, cause)
	if code == CodeBusy {
		w.Header().Set("Retry-After", "1")
	}
	writeError(w, status, code, msg)
}

// classifyLogged classifies err as the answer to r and logs the failure
// with its cause.
func (a *api) classifyLogged(r *http.Request, err, cause error) (status int, code, msg string) {
	status, code, msg = classify(err)
	level := slog.LevelDebug
	if status >= http.StatusInternalServerError {
		level = slog.LevelError
	}
	a.log.Log(r.Context(), level, "api request failed", "method", r.Method, "path", r.URL.Path,
		"session_id", r.PathValue("id"), "status", status, "err", cause)
	return status, code, msg
}

// sessionID parses the path's session id: the API's edge, where an id from
// outside becomes a domain.ID that the layers below need not check again.
func sessionID(r *http.Request) (domain.ID, error) {
	sid, err := domain.ParseSessionID(r.PathValue("id"))
	if err != nil {
		return domain.ID{}, fmt.Errorf("%w: id: %w", session.ErrInvalidRequest, err)
	}
	return sid, nil
}

// decodeJSON reads one JSON value of at most maxJSONBytes into v, strictly
// (strictjson): valid UTF-8, no duplicate key, keys spelt exactly, no
// unknown field (a misspelt field would otherwise be silently dropped), no
// trailing data.
func decodeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxJSONBytes))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return fmt.Errorf("%w: body: larger than %d bytes", errTooLarge, maxJSONBytes)
	case err != nil:
		return bodyError(err)
	}
	if err := strictjson.Unmarshal(body, v); err != nil {
		// strictjson's messages name a field or an offset, never a value.
		return fmt.Errorf("%w: body: %w", session.ErrInvalidRequest, err)
	}
	return nil
}

// reply answers err when it is set, v as JSON with status 200 otherwise.
func (a *api) reply(w http.ResponseWriter, r *http.Request, v any, err error) {
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.replyStatus(w, http.StatusOK, v)
}

// replyStatus answers v as JSON with status.
func (a *api) replyStatus(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		writeError(w, http.StatusInternalServerError, CodeInternal, "internal error")
		return
	}
	writeJSON(w, status, body)
}

// done answers err when it is set, 204 otherwise.
func (a *api) done(w http.ResponseWriter, r *http.Request, err error) {
	if err != nil {
		a.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (a *api) provision(w http.ResponseWriter, r *http.Request) {
	sid, err := sessionID(r)
	var req SessionRequest
	if err == nil {
		err = decodeJSON(w, r, &req)
	}
	var info ports.SessionInfo
	if err == nil {
		info, err = a.svc.Provision(r.Context(), sid, req.Request())
	}
	a.reply(w, r, NewSessionResponse(info), err)
}

func (a *api) get(w http.ResponseWriter, r *http.Request) {
	sid, err := sessionID(r)
	var info ports.SessionInfo
	if err == nil {
		info, err = a.svc.Get(r.Context(), sid)
	}
	a.reply(w, r, NewSessionResponse(info), err)
}

func (a *api) delete(w http.ResponseWriter, r *http.Request) {
	sid, err := sessionID(r)
	checkpoint := false
	if err == nil {
		checkpoint, err = boolParam(r, "checkpoint")
	}
	if err == nil {
		err = a.svc.Delete(r.Context(), sid, checkpoint)
	}
	a.done(w, r, err)
}

func (a *api) list(w http.ResponseWriter, r *http.Request) {
	list, err := a.svc.List(r.Context())
	a.reply(w, r, NewSessionList(list), err)
}

// execRequest is the wire form of sandbox.ExecRequest; ExecResponse is the
// result's.
type execRequest struct {
	Command   string `json:"command"`
	TimeoutMS int64  `json:"timeout_ms,omitempty"`
}

func (a *api) exec(w http.ResponseWriter, r *http.Request) {
	sid, req, err := execInput(w, r)
	var res sandbox.ExecResult
	if err == nil {
		res, err = a.svc.Exec(r.Context(), sid, req)
	}
	a.reply(w, r, NewExecResponse(res), err)
}

// execInput reads the session id and the exec request of exec and
// exec:stream.
func execInput(w http.ResponseWriter, r *http.Request) (domain.ID, sandbox.ExecRequest, error) {
	sid, err := sessionID(r)
	var req execRequest
	if err == nil {
		err = decodeJSON(w, r, &req)
	}
	if err == nil && (req.TimeoutMS < 0 || req.TimeoutMS > maxTimeout.Milliseconds()) {
		err = fmt.Errorf("%w: timeout_ms: must be 0 (no limit) to %d, got %d", session.ErrInvalidRequest, maxTimeout.Milliseconds(), req.TimeoutMS)
	}
	return sid, sandbox.ExecRequest{Command: req.Command, Timeout: time.Duration(req.TimeoutMS) * time.Millisecond}, err
}

// copyOut streams src to w and reports a failure mid-stream, after the
// status is sent, by aborting the response: the client then sees a broken
// transfer rather than a complete-looking short one. http.ErrAbortHandler is
// net/http's documented way to do that; the server recovers it silently.
func (a *api) copyOut(w http.ResponseWriter, r *http.Request, src io.Reader) {
	if r.Method == http.MethodHead {
		return // the headers are the answer; a body write would fail
	}
	if _, err := io.Copy(w, src); err != nil {
		a.log.WarnContext(r.Context(), "api stream aborted", "path", r.URL.Path,
			"session_id", r.PathValue("id"), "err", err)
		panic(http.ErrAbortHandler)
	}
}
