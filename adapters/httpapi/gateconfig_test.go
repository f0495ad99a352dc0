package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/adapters/sessionstore"
	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/egress"
	"github.com/sandgate/sandgate/core/gatewire"
	"github.com/sandgate/sandgate/core/session"
)

const testSecret = "ghp_0123456789abcdefSECRET"

var testKey = bytes.Repeat([]byte{7}, session.KeyLen)

// env is one handler on a real SQLite store behind a real HTTP server, with
// its log captured at debug level.
type env struct {
	store *sessionstore.Store
	srv   *httptest.Server
	log   *bytes.Buffer
}

// logs stops the server, which waits for every request in flight, and
// returns what was logged (the handler's writes then happen before this
// read; slog's handler serialises its own writes).
func (e *env) logs() string {
	e.srv.Close()
	return e.log.String()
}

func newEnv(t *testing.T) *env {
	t.Helper()
	store, err := sessionstore.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "store.db"), testKey)
	require.NoError(t, err)
	buf := &bytes.Buffer{}
	log := slog.New(slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	srv := httptest.NewServer(NewGateConfigHandler(store, store, log))
	t.Cleanup(func() {
		srv.Close()
		// Closing twice (a test that closed the store itself) is harmless.
		_ = store.Close()
	})
	return &env{store: store, srv: srv, log: buf}
}

// session stores a session with one credential and a live token for it.
func (e *env) session(t *testing.T, secret string) (domain.ID, string) {
	t.Helper()
	ctx := context.Background()
	sid := domain.NewID("ses")
	require.NoError(t, e.store.PutSession(ctx, session.Session{
		ID:         sid,
		Networking: domain.Networking{Type: domain.NetLimited, AllowedHosts: []string{"api.github.com"}},
		Credentials: []session.Credential{{
			ID: "cred_gh", Name: "GITHUB_TOKEN", Secret: gatewire.NewSecret(secret),
			AllowedHosts: []string{"api.github.com"},
			Locations:    []gatewire.Location{gatewire.LocationHeaders},
		}},
	}))
	token := e.store.Generate()
	require.NoError(t, e.store.Persist(ctx, sid, token))
	return sid, token
}

type reply struct {
	status int
	header http.Header
	body   []byte
}

// do sends method path with the given Authorization header values.
func (e *env) do(t *testing.T, method, path string, auth ...string) reply {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, e.srv.URL+path, nil)
	require.NoError(t, err)
	for _, a := range auth {
		req.Header.Add("Authorization", a)
	}
	resp, err := e.srv.Client().Do(req)
	require.NoError(t, err)
	defer func() { require.NoError(t, resp.Body.Close()) }()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return reply{status: resp.StatusCode, header: resp.Header, body: body}
}

// requireError checks the API's error shape.
func requireError(t *testing.T, r reply, status int, code string) {
	t.Helper()
	require.Equal(t, status, r.status, "body: %s", r.body)
	require.Equal(t, "application/json", r.header.Get("Content-Type"))
	require.Equal(t, "no-store", r.header.Get("Cache-Control"))
	var e errorBody
	require.NoError(t, json.Unmarshal(r.body, &e))
	require.Equal(t, code, e.Error.Code)
	require.NotEmpty(t, e.Error.Message)
}

func TestGateConfigServesTheSessionsConfig(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sid, token := e.session(t, testSecret)
	r := e.do(t, http.MethodGet, gatewire.ConfigPath, "Bearer "+token)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	require.Equal(t, "application/json", r.header.Get("Content-Type"))
	require.Equal(t, "no-store", r.header.Get("Cache-Control"))
	cfg, err := gatewire.Parse(r.body)
	require.NoError(t, err)
	require.Equal(t, domain.Networking{Type: domain.NetLimited, AllowedHosts: []string{"api.github.com"}}, cfg.Networking)
	require.Len(t, cfg.Credentials, 1)
	c := cfg.Credentials[0]
	require.Equal(t, "cred_gh", c.ID)
	require.Equal(t, egress.Placeholder(sid, "GITHUB_TOKEN"), c.Placeholder)
	require.Equal(t, testSecret, c.Secret.Reveal())
	require.Equal(t, []string{"api.github.com"}, c.AllowedHosts)
	require.Equal(t, []gatewire.Location{gatewire.LocationHeaders}, c.Locations)
	logs := e.logs()
	require.Contains(t, logs, "gate config served")
	require.NotContains(t, logs, testSecret)
	require.NotContains(t, logs, token)
}

func TestGateConfigRevokedTokenAtOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sid, old := e.session(t, testSecret)
	require.Equal(t, http.StatusOK, e.do(t, http.MethodGet, gatewire.ConfigPath, "Bearer "+old).status)
	fresh := e.store.Generate()
	require.NoError(t, e.store.Persist(context.Background(), sid, fresh))
	r := e.do(t, http.MethodGet, gatewire.ConfigPath, "Bearer "+old)
	requireError(t, r, http.StatusUnauthorized, CodeUnauthorized)
	require.Equal(t, "Bearer", r.header.Get("WWW-Authenticate"))
	require.Equal(t, http.StatusOK, e.do(t, http.MethodGet, gatewire.ConfigPath, "Bearer "+fresh).status)
	require.NoError(t, e.store.Revoke(context.Background(), sid))
	requireError(t, e.do(t, http.MethodGet, gatewire.ConfigPath, "Bearer "+fresh), http.StatusUnauthorized, CodeUnauthorized)
}

// TestGateConfigAuthorizationSpellings pins the header grammar: the scheme
// is case-insensitive (RFC 9110 §11.1), everything else is exact.
func TestGateConfigAuthorizationSpellings(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, token := e.session(t, testSecret)
	for _, tc := range []struct {
		name   string
		auth   []string
		status int
	}{
		{"canonical", []string{"Bearer " + token}, http.StatusOK},
		{"lower-case scheme", []string{"bearer " + token}, http.StatusOK},
		{"upper-case scheme", []string{"BEARER " + token}, http.StatusOK},
		{"surrounding whitespace (the server trims it)", []string{" Bearer " + token + " \t"}, http.StatusOK},
		{"no header", nil, http.StatusUnauthorized},
		{"empty header", []string{""}, http.StatusUnauthorized},
		{"token without scheme", []string{token}, http.StatusUnauthorized},
		{"scheme without token", []string{"Bearer"}, http.StatusUnauthorized},
		{"scheme and a space", []string{"Bearer "}, http.StatusUnauthorized},
		{"two spaces", []string{"Bearer  " + token}, http.StatusUnauthorized},
		{"tab instead of space", []string{"Bearer\t" + token}, http.StatusUnauthorized},
		{"other scheme", []string{"Basic " + token}, http.StatusUnauthorized},
		{"trailing parameter", []string{"Bearer " + token + " x"}, http.StatusUnauthorized},
		{"upper-case token", []string{"Bearer " + strings.ToUpper(token)}, http.StatusUnauthorized},
		{"truncated token", []string{"Bearer " + token[:len(token)-1]}, http.StatusUnauthorized},
		{"unknown token", []string{"Bearer " + gatewire.NewToken()}, http.StatusUnauthorized},
		{"two headers, both valid", []string{"Bearer " + token, "Bearer " + token}, http.StatusUnauthorized},
		{"10 KB header", []string{"Bearer " + token + strings.Repeat("a", 10<<10)}, http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := e.do(t, http.MethodGet, gatewire.ConfigPath, tc.auth...)
			if tc.status == http.StatusOK {
				require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
				_, err := gatewire.Parse(r.body)
				require.NoError(t, err)
				return
			}
			requireError(t, r, tc.status, CodeUnauthorized)
			require.NotContains(t, string(r.body), token)
			require.NotContains(t, string(r.body), testSecret)
		})
	}
	t.Cleanup(func() { require.NotContains(t, e.logs(), token) })
}

func TestGateConfigSessionGone(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	sid, token := e.session(t, testSecret)
	require.NoError(t, e.store.DeleteSession(ctx, sid))
	requireError(t, e.do(t, http.MethodGet, gatewire.ConfigPath, "Bearer "+token), http.StatusUnauthorized, CodeUnauthorized)

	// A token whose session record was never stored (or deleted while the
	// token row survived) is refused the same way.
	orphan := domain.NewID("ses")
	tok := e.store.Generate()
	require.NoError(t, e.store.Persist(ctx, orphan, tok))
	requireError(t, e.do(t, http.MethodGet, gatewire.ConfigPath, "Bearer "+tok), http.StatusUnauthorized, CodeUnauthorized)
	require.Contains(t, e.logs(), "the token's session record is gone")
}

func TestGateConfigMethodAndPath(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, token := e.session(t, testSecret)
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodHead} {
		r := e.do(t, m, gatewire.ConfigPath, "Bearer "+token)
		require.Equal(t, http.StatusMethodNotAllowed, r.status, m)
		require.Equal(t, http.MethodGet, r.header.Get("Allow"), m)
		if m != http.MethodHead {
			requireError(t, r, http.StatusMethodNotAllowed, CodeMethodNotAllowed)
		}
	}
	for _, p := range []string{"/", "/internal/v1/gate", gatewire.ConfigPath + "/x"} {
		requireError(t, e.do(t, http.MethodGet, p, "Bearer "+token), http.StatusNotFound, CodeNotFound)
	}
}

func TestGateConfigStoreFailure(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, token := e.session(t, testSecret)
	require.NoError(t, e.store.Close())
	r := e.do(t, http.MethodGet, gatewire.ConfigPath, "Bearer "+token)
	requireError(t, r, http.StatusInternalServerError, CodeInternal)
	require.JSONEq(t, `{"error":{"code":"internal","message":"the gate config could not be served"}}`, string(r.body))
	logs := e.logs()
	require.Contains(t, logs, "gate config failed")
	require.NotContains(t, logs, token)
}

// shortSecrets hands out every stored session with a 4-byte secret: a
// record the store refuses to write today but an older version may have
// written.
type shortSecrets struct{ *sessionstore.Store }

func (s shortSecrets) GetSession(ctx context.Context, id domain.ID) (session.Session, error) {
	rec, err := s.Store.GetSession(ctx, id)
	for i := range rec.Credentials {
		rec.Credentials[i].Secret = gatewire.NewSecret("shrt")
	}
	return rec, err
}

// TestGateConfigRecordTheGateWouldRefuse: for a record the wire contract
// refuses, the control plane says so in its log (naming the field, not the
// value) instead of serving a config the gate rejects.
func TestGateConfigRecordTheGateWouldRefuse(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, token := e.session(t, testSecret)
	srv := httptest.NewServer(NewGateConfigHandler(e.store, shortSecrets{e.store}, slog.New(slog.NewJSONHandler(e.log, nil))))
	defer srv.Close()
	req, err := http.NewRequest(http.MethodGet, srv.URL+gatewire.ConfigPath, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusInternalServerError, resp.StatusCode)
	srv.Close()
	logs := e.logs()
	require.Contains(t, logs, "credentials[0].secret")
	require.NotContains(t, logs, `shrt`)
}
