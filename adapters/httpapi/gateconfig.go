// Package httpapi is sandgate's HTTP surface on the control plane: the
// endpoint the egress gates fetch their config from (GET
// /internal/v1/gate/config, CONTRACT §0 and C-GW-1), the executor's API
// over a ports.Service (NewAPIHandler) and its Go client (Client).
//
// Errors have the API's one shape, {"error":{"code":"…","message":"…"}},
// with fixed messages: no response ever echoes a token, a secret or a Go
// error's text.
package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/sandgate/sandgate/core/gatewire"
	"github.com/sandgate/sandgate/core/session"
	"github.com/sandgate/sandgate/ports"
)

// Error codes of the API's error shape.
const (
	CodeUnauthorized     = "unauthorized"
	CodeMethodNotAllowed = "method_not_allowed"
	CodeNotFound         = "not_found"
	CodeInternal         = "internal"
)

// bearerScheme is the authentication scheme of the gate token. RFC 9110
// §11.1 makes scheme names case-insensitive, so "bearer" is accepted too;
// everything else is strict: exactly one space, then the token in its exact
// shape (gatewire.ValidateToken), nothing around it. Go's server already trims
// the field value's leading and trailing whitespace.
const bearerScheme = "Bearer"

// maxAuthorization bounds the header the handler looks at: the scheme, one
// space and a token. Anything longer is refused before any parsing or query.
const maxAuthorization = len(bearerScheme) + 1 + gatewire.TokenLen

// gateConfigHandler serves one session's gate config to its gate.
type gateConfigHandler struct {
	tokens   ports.GateTokens
	sessions ports.Sessions
	log      *slog.Logger
}

// NewGateConfigHandler returns the handler of GET /internal/v1/gate/config
// (gatewire.ConfigPath; every other path is 404). It authenticates the request's
// `Authorization: Bearer <gate token>` (tokens.Authenticate), loads that
// session's record (sessions.GetSession) and answers its gate config
// (session.ConfigFor) as JSON with Cache-Control: no-store, since the body
// carries the session's secrets.
//
// A missing, malformed, unknown or revoked token, and a token whose session
// record is gone, answer 401 "unauthorized" (the gate then denies everything
// and stops fetching); another method 405; a store failure or a record that
// does not make a valid config 500 "internal" with a fixed message, the cause
// logged (never a token or a secret: the ports' errors carry neither, and
// gatewire redacts secrets). A nil log discards.
func NewGateConfigHandler(tokens ports.GateTokens, sessions ports.Sessions, log *slog.Logger) http.Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	h := &gateConfigHandler{tokens: tokens, sessions: sessions, log: log}
	mux := http.NewServeMux()
	mux.Handle(gatewire.ConfigPath, h)
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		writeError(w, http.StatusNotFound, CodeNotFound, "no such endpoint")
	})
	return mux
}

func (h *gateConfigHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		writeError(w, http.StatusMethodNotAllowed, CodeMethodNotAllowed, "only GET is allowed")
		return
	}
	token, reason := bearerToken(r.Header)
	if reason != "" {
		h.unauthorized(w, r, reason)
		return
	}
	cfg, err := h.config(r.Context(), token)
	switch {
	case errors.Is(err, gatewire.ErrUnauthorized):
		h.unauthorized(w, r, "unknown or revoked token")
		return
	case errors.Is(err, session.ErrNotFound):
		h.unauthorized(w, r, "the token's session record is gone")
		return
	case err != nil:
		h.log.ErrorContext(r.Context(), "gate config failed", "err", err)
		writeError(w, http.StatusInternalServerError, CodeInternal, "the gate config could not be served")
		return
	}
	body, err := json.Marshal(cfg)
	if err == nil && len(body) > gatewire.MaxConfigBytes {
		err = errors.New("the config exceeds gatewire.MaxConfigBytes")
	}
	if err != nil {
		h.log.ErrorContext(r.Context(), "gate config failed", "err", err)
		writeError(w, http.StatusInternalServerError, CodeInternal, "the gate config could not be served")
		return
	}
	h.log.DebugContext(r.Context(), "gate config served", "config", cfg)
	writeJSON(w, http.StatusOK, body)
}

// config authenticates token and builds its session's config. The session's
// id is attached to every error (it is not a secret).
func (h *gateConfigHandler) config(ctx context.Context, token string) (gatewire.Config, error) {
	sid, err := h.tokens.Authenticate(ctx, token)
	if err != nil {
		return gatewire.Config{}, err
	}
	rec, err := h.sessions.GetSession(ctx, sid)
	if err != nil {
		return gatewire.Config{}, fmt.Errorf("session %s: %w", sid, err)
	}
	cfg := session.ConfigFor(rec)
	// Validated here as well as at the gate, so a record the gate would
	// refuse is reported where an operator can fix it.
	if err := cfg.Validate(); err != nil {
		return gatewire.Config{}, fmt.Errorf("session %s: %w", sid, err)
	}
	return cfg, nil
}

// bearerToken extracts the token of the one Authorization header, or says in
// a few words why there is none (for the log; the token is never quoted).
func bearerToken(h http.Header) (token, reason string) {
	vals := h.Values("Authorization")
	switch {
	case len(vals) == 0:
		return "", "no Authorization header"
	case len(vals) > 1:
		return "", "more than one Authorization header"
	case len(vals[0]) > maxAuthorization:
		return "", "Authorization header too long"
	}
	scheme, tok, ok := strings.Cut(vals[0], " ")
	switch {
	case !ok || !strings.EqualFold(scheme, bearerScheme):
		return "", "not a Bearer Authorization header"
	case gatewire.ValidateToken(tok) != nil:
		return "", "malformed gate token"
	}
	return tok, ""
}

func (h *gateConfigHandler) unauthorized(w http.ResponseWriter, r *http.Request, reason string) {
	h.log.WarnContext(r.Context(), "gate config refused", "reason", reason, "remote", r.RemoteAddr)
	w.Header().Set("WWW-Authenticate", bearerScheme)
	writeError(w, http.StatusUnauthorized, CodeUnauthorized, "a valid gate token is required")
}

// errorBody is the API's error shape.
type errorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// writeError answers the API's error shape with a fixed message.
func writeError(w http.ResponseWriter, status int, code, message string) {
	var e errorBody
	e.Error.Code, e.Error.Message = code, message
	body, err := json.Marshal(e)
	if err != nil {
		// Two plain strings always marshal; keep the status regardless.
		body = []byte(`{"error":{"code":"internal","message":"internal error"}}`)
	}
	writeJSON(w, status, body)
}

// writeJSON writes a JSON body that no cache may keep.
func writeJSON(w http.ResponseWriter, status int, body []byte) {
	hd := w.Header()
	hd.Set("Content-Type", "application/json")
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	// A failed write means the client went away; there is no one to tell.
	_, _ = w.Write(body)
}
