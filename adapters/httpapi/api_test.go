package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/gatewire"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/core/session"
	"github.com/sandgate/sandgate/ports"
	"github.com/sandgate/sandgate/ports/portfake"
)

const apiToken = "test-api-token-0123456789"

var sid = domain.MustParseSessionID("ses_test")

// apiEnv is the API handler over a fake service behind a real HTTP server,
// with a client and the handler's log.
type apiEnv struct {
	svc    *portfake.Service
	srv    *httptest.Server
	client *Client
	log    *bytes.Buffer
}

func newAPI(t *testing.T, opts APIOptions) *apiEnv {
	t.Helper()
	buf := &bytes.Buffer{}
	opts.Logger = slog.New(slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	svc := portfake.NewService()
	svc.Infos = []ports.SessionInfo{portfake.Info(domain.MustParseSessionID("ses_a")), {ID: domain.MustParseSessionID("ses_b"), State: ports.StateStopped}}
	srv := httptest.NewServer(NewAPIHandler(svc, opts))
	t.Cleanup(srv.Close)
	c, err := NewClient(srv.URL, opts.Token, srv.Client())
	require.NoError(t, err)
	return &apiEnv{svc: svc, srv: srv, client: c, log: buf}
}

// logs stops the server (waiting for the requests in flight) and returns
// what the handler logged.
func (e *apiEnv) logs() string {
	e.srv.Close()
	return e.log.String()
}

type answer struct {
	status int
	code   string
	msg    string
	header http.Header
	body   []byte
}

// do sends one raw request with the API token unless hdr says otherwise.
func (e *apiEnv) do(t *testing.T, method, path string, body io.Reader, hdr http.Header) answer {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, e.srv.URL+path, body)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+apiToken)
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := e.srv.Client().Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	a := answer{status: resp.StatusCode, header: resp.Header, body: raw}
	var eb errorBody
	if json.Unmarshal(raw, &eb) == nil {
		a.code, a.msg = eb.Error.Code, eb.Error.Message
	}
	return a
}

func TestClientRoundTrip(t *testing.T) {
	t.Parallel()
	e := newAPI(t, APIOptions{Token: apiToken})
	ctx := context.Background()
	c := e.client

	req := session.Request{
		Image: "img", Workdir: "/w", Env: map[string]string{"A": "1"},
		Networking: domain.Networking{Type: domain.NetLimited, AllowedHosts: []string{"example.com"}},
		Credentials: []session.Credential{{ID: "c1", Name: "TOKEN", Secret: gatewire.NewSecret("s3cr3t-value-0123456789"),
			AllowedHosts: []string{"example.com"}, Locations: []gatewire.Location{gatewire.LocationHeaders, gatewire.LocationBody}}},
	}
	got, err := c.Provision(ctx, sid, req)
	require.NoError(t, err)
	require.Equal(t, portfake.Info(sid), got)
	require.Equal(t, req, e.svc.Request())

	got, err = c.Get(ctx, sid)
	require.NoError(t, err)
	require.Equal(t, portfake.Info(sid), got)

	list, err := c.List(ctx)
	require.NoError(t, err)
	require.Equal(t, []ports.SessionInfo{portfake.Info(domain.MustParseSessionID("ses_a")), {ID: domain.MustParseSessionID("ses_b"), State: ports.StateStopped}}, list)

	e.svc.ExecResult = sandbox.ExecResult{Stdout: "out:ls", Stderr: "err", ExitCode: 7, TimedOut: true, Truncated: true}
	res, err := c.Exec(ctx, sid, sandbox.ExecRequest{Command: "ls", Timeout: 1500*time.Millisecond + 1})
	require.NoError(t, err)
	require.Equal(t, sandbox.ExecResult{Stdout: "out:ls", Stderr: "err", ExitCode: 7, TimedOut: true, Truncated: true}, res)
	require.Equal(t, sandbox.ExecRequest{Command: "ls", Timeout: 1501 * time.Millisecond}, e.svc.ExecRequest())

	require.NoError(t, c.WriteFile(ctx, sid, "/w/a b", strings.NewReader("hello"), 5))
	require.NoError(t, c.WriteFile(ctx, sid, "/w/empty", nil, 0))
	rc, size, err := c.ReadFile(ctx, sid, "/w/a b", 100)
	require.NoError(t, err)
	data, err := io.ReadAll(rc)
	require.NoError(t, err)
	require.NoError(t, rc.Close())
	require.Equal(t, int64(5), size)
	require.Equal(t, "hello", string(data))
	require.Equal(t, int64(100), e.svc.MaxBytes())
	require.Equal(t, []byte{}, e.svc.File(sid, "/w/empty"))

	batch := []sandbox.FileWrite{{Path: "/w/x", Data: []byte("x")}, {Path: "/w/d/y", Data: nil}}
	require.NoError(t, c.WriteFiles(ctx, sid, batch))
	require.Equal(t, []sandbox.FileWrite{{Path: "/w/x", Data: []byte("x")}, {Path: "/w/d/y", Data: []byte{}}}, e.svc.Batch())

	rc, err = c.Export(ctx, sid, "/w")
	require.NoError(t, err)
	data, err = io.ReadAll(rc)
	require.NoError(t, err)
	require.NoError(t, rc.Close())
	require.Equal(t, "tar:/w", string(data))

	require.NoError(t, c.Delete(ctx, sid, false))
	require.NoError(t, c.Delete(ctx, sid, true))
	require.Equal(t, []bool{false, true}, e.svc.Deleted())

	require.Equal(t, []string{
		"provision ses_test", "get ses_test", "list", "exec ses_test", "write ses_test /w/a b",
		"write ses_test /w/empty", "read ses_test /w/a b", "batch ses_test", "export ses_test /w",
		"delete ses_test", "delete ses_test",
	}, e.svc.Calls())
	require.NotContains(t, e.logs(), "s3cr3t-value")
}

func TestReadFileMaxBytes(t *testing.T) {
	t.Parallel()
	e := newAPI(t, APIOptions{Token: apiToken, MaxStreamBytes: 1000})
	e.svc.Put(sid, "/f", []byte("x"))
	for _, tc := range []struct {
		query string
		want  int64
	}{
		{"", 1000}, {"&max_bytes=10", 10}, {"&max_bytes=5000", 1000},
	} {
		a := e.do(t, http.MethodGet, "/v1/sessions/ses_test/files?path=/f"+tc.query, nil, nil)
		require.Equal(t, http.StatusOK, a.status)
		require.Equal(t, "1", a.header.Get("Content-Length"))
		require.Equal(t, tc.want, e.svc.MaxBytes(), tc.query)
	}
	for _, bad := range []string{"0", "-1", "x"} {
		a := e.do(t, http.MethodGet, "/v1/sessions/ses_test/files?path=/f&max_bytes="+bad, nil, nil)
		require.Equal(t, http.StatusBadRequest, a.status)
		require.Equal(t, CodeInvalidArgument, a.code)
	}
}

// TestErrorCodes answers every sentinel from the service and checks the
// status and code on the wire and errors.Is through the client.
func TestErrorCodes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err    error
		status int
		code   string
		is     error // what the client's error matches; nil = only *APIError
	}{
		{fmt.Errorf("attach: %w", sandbox.ErrNotFound), 404, CodeNotFound, sandbox.ErrNotFound},
		{session.ErrNotFound, 404, CodeNotFound, session.ErrNotFound},
		{fmt.Errorf("image: %w", sandbox.ErrSpecMismatch), 409, CodeSpecMismatch, sandbox.ErrSpecMismatch},
		{sandbox.ErrFileNotExist, 404, CodeFileNotExist, sandbox.ErrFileNotExist},
		{sandbox.ErrIsDirectory, 422, CodeIsDirectory, sandbox.ErrIsDirectory},
		{sandbox.ErrNotDirectory, 422, CodeNotDirectory, sandbox.ErrNotDirectory},
		{sandbox.ErrNotRegularFile, 422, CodeNotRegularFile, sandbox.ErrNotRegularFile},
		{sandbox.ErrNotReplaceable, 422, CodeNotReplaceable, sandbox.ErrNotReplaceable},
		{&sandbox.PathNotWritableError{Path: "/x", Reason: "Read-only file system"}, 422, CodeNotWritable, sandbox.ErrNotWritable},
		{sandbox.ErrFileTooLarge, 413, CodeFileTooLarge, sandbox.ErrFileTooLarge},
		{fmt.Errorf("/root/x: %w: Permission denied", sandbox.ErrNotReadable), 422, CodeNotReadable, sandbox.ErrNotReadable},
		{fmt.Errorf(`image "Bad": %w: invalid reference format`, sandbox.ErrImageUnavailable), 422, CodeImageUnavailable, sandbox.ErrImageUnavailable},
		{fmt.Errorf(`image "busybox": %w: no /bin/bash`, sandbox.ErrImageUnusable), 422, CodeImageUnusable, sandbox.ErrImageUnusable},
		{fmt.Errorf(`gated sandbox from "x": %w`, sandbox.ErrGateUIDImage), 422, CodeGateUIDImage, sandbox.ErrGateUIDImage},
		{fmt.Errorf(`workdir "/etc/passwd": %w`, sandbox.ErrInvalidWorkdir), 422, CodeInvalidWorkdir, sandbox.ErrInvalidWorkdir},
		{fmt.Errorf("%w: env: bad", session.ErrInvalidRequest), 400, CodeInvalidArgument, session.ErrInvalidRequest},
		{fmt.Errorf("%w: %w: x", session.ErrInvalidRequest, session.ErrGateUnavailable), 400, CodeInvalidArgument, session.ErrInvalidRequest},
		{fmt.Errorf("x: %w", ports.ErrNotImplemented), 501, CodeNotImplemented, ports.ErrNotImplemented},
		{fmt.Errorf("delete: %w: more than 1 bytes", ports.ErrCheckpointTooLarge), 413, CodeCheckpointTooLarge, ports.ErrCheckpointTooLarge},
		{errors.New("docker: dial unix /var/run/docker.sock: secret-looking detail"), 500, CodeInternal, nil},
	} {
		t.Run(tc.code+" "+tc.err.Error(), func(t *testing.T) {
			t.Parallel()
			e := newAPI(t, APIOptions{Token: apiToken})
			e.svc.Err = tc.err
			a := e.do(t, http.MethodGet, "/v1/sessions/ses_test", nil, nil)
			require.Equal(t, tc.status, a.status)
			require.Equal(t, tc.code, a.code)
			require.Equal(t, "application/json", a.header.Get("Content-Type"))
			if tc.code == CodeInternal {
				require.Equal(t, "internal error", a.msg)
			} else {
				require.Equal(t, tc.err.Error(), a.msg)
			}
			_, err := e.client.Get(context.Background(), sid)
			var apiErr *APIError
			require.ErrorAs(t, err, &apiErr)
			require.Equal(t, tc.status, apiErr.Status)
			require.Equal(t, tc.code, apiErr.Code)
			if tc.is != nil {
				require.ErrorIs(t, err, tc.is)
			}
			require.NotErrorIs(t, err, sandbox.ErrInvalidExec, "a server-only row matched on the client")
		})
	}
}

func TestAuth(t *testing.T) {
	t.Parallel()
	e := newAPI(t, APIOptions{Token: apiToken})
	for _, tc := range []struct {
		name string
		hdr  []string // Authorization values; nil = none
	}{
		{"none", nil},
		{"wrong token", []string{"Bearer wrong"}},
		{"token prefix", []string{"Bearer " + apiToken[:10]}},
		{"token plus more", []string{"Bearer " + apiToken + "x"}},
		{"basic scheme", []string{"Basic " + apiToken}},
		{"no scheme", []string{apiToken}},
		{"two headers", []string{"Bearer " + apiToken, "Bearer " + apiToken}},
		{"empty", []string{""}},
	} {
		for _, path := range []string{"/v1/sessions", "/v1/sessions/ses_test/exec", "/v1/nothing"} {
			a := e.do(t, http.MethodGet, path, nil, http.Header{"Authorization": tc.hdr})
			require.Equal(t, http.StatusUnauthorized, a.status, tc.name+" "+path)
			require.Equal(t, CodeUnauthorized, a.code)
			require.Equal(t, "Bearer", a.header.Get("WWW-Authenticate"))
		}
	}
	// Every route, the procs' WebSocket attach among them.
	for _, route := range Routes() {
		method, path, _ := strings.Cut(route, " ")
		path = strings.NewReplacer("{id}", "ses_test", "{pid}", "p1").Replace(path)
		a := e.do(t, method, path, nil, http.Header{"Authorization": nil})
		require.Equal(t, http.StatusUnauthorized, a.status, route)
	}
	a := e.do(t, http.MethodGet, "/v1/sessions", nil, http.Header{"Authorization": {"bearer " + apiToken}})
	require.Equal(t, http.StatusOK, a.status, "the scheme is case-insensitive")
	require.Equal(t, []string{"list"}, e.svc.Calls(), "a refused request reached the service")

	c, err := NewClient(e.srv.URL, "wrong", e.srv.Client())
	require.NoError(t, err)
	_, err = c.List(context.Background())
	require.ErrorIs(t, err, ErrUnauthorized)
	require.NotContains(t, e.logs(), apiToken)

	open := newAPI(t, APIOptions{})
	a = open.do(t, http.MethodGet, "/v1/sessions", nil, http.Header{"Authorization": nil})
	require.Equal(t, http.StatusOK, a.status, "an empty Token leaves the API open")
}

func TestRouting(t *testing.T) {
	t.Parallel()
	e := newAPI(t, APIOptions{Token: apiToken})
	for _, tc := range []struct {
		method, path string
		status       int
		code, allow  string
	}{
		{http.MethodPost, "/v1/sessions/ses_test", 405, CodeMethodNotAllowed, "PUT, GET, DELETE"},
		{http.MethodGet, "/v1/sessions/ses_test/exec", 405, CodeMethodNotAllowed, "POST"},
		{http.MethodPost, "/v1/sessions/ses_test/files", 405, CodeMethodNotAllowed, "GET, PUT, DELETE"},
		{http.MethodPost, "/v1/sessions", 405, CodeMethodNotAllowed, "GET"},
		{http.MethodGet, "/v1/sessions/ses_test/nothing", 404, CodeNotFound, ""},
		{http.MethodGet, "/elsewhere", 404, CodeNotFound, ""},
		{http.MethodGet, "/v1/sessions/Bad-Id", 400, CodeInvalidArgument, ""},
		{http.MethodDelete, "/v1/sessions/ses_test?checkpoint=maybe", 400, CodeInvalidArgument, ""},
	} {
		a := e.do(t, tc.method, tc.path, nil, nil)
		require.Equal(t, tc.status, a.status, tc.method+" "+tc.path)
		require.Equal(t, tc.code, a.code, tc.method+" "+tc.path)
		require.Equal(t, tc.allow, a.header.Get("Allow"), tc.method+" "+tc.path)
	}
	require.Empty(t, e.svc.Calls())
}

func TestJSONBodies(t *testing.T) {
	t.Parallel()
	e := newAPI(t, APIOptions{Token: apiToken})
	for _, tc := range []struct {
		name, path, body string
		status           int
		code, msg        string
	}{
		{"unknown field", "/v1/sessions/ses_test", `{"imagee":"x"}`, 400, CodeInvalidArgument, `$.imagee: unknown field`},
		// Issue 11 item 7: encoding/json took both of these.
		{"key in another case", "/v1/sessions/ses_test/exec", `{"Command":"x"}`, 400, CodeInvalidArgument, "$.Command: unknown field"},
		{"nested key in another case", "/v1/sessions/ses_test", `{"networking":{"TYPE":"limited"}}`, 400, CodeInvalidArgument, "$.networking.TYPE: unknown field"},
		{"duplicate key", "/v1/sessions/ses_test/exec", `{"command":"rm -rf /tmp/x","command":"true"}`, 400, CodeInvalidArgument, "$.command: duplicate key"},
		{"duplicate env key", "/v1/sessions/ses_test", `{"env":{"A":"1","A":"2"}}`, 400, CodeInvalidArgument, "$.env.A: duplicate key"},
		// Issue 11 item 6: encoding/json ran "\ufffd" for a raw 0xff.
		{"invalid UTF-8", "/v1/sessions/ses_test/exec", "{\"command\":\"printf \xff\"}", 400, CodeInvalidArgument, "not valid UTF-8 at byte 19"},
		{"not JSON", "/v1/sessions/ses_test", `{`, 400, CodeInvalidArgument, "body:"},
		{"trailing data", "/v1/sessions/ses_test", `{} {}`, 400, CodeInvalidArgument, "trailing data"},
		{"too large", "/v1/sessions/ses_test", `{"image":"` + strings.Repeat("x", maxJSONBytes) + `"}`, 413, CodeFileTooLarge, "larger than"},
		{"negative timeout", "/v1/sessions/ses_test/exec", `{"command":"x","timeout_ms":-1}`, 400, CodeInvalidArgument, "timeout_ms"},
		{"huge timeout", "/v1/sessions/ses_test/exec", `{"command":"x","timeout_ms":9223372036854775807}`, 400, CodeInvalidArgument, "timeout_ms"},
	} {
		method := http.MethodPut
		if strings.HasSuffix(tc.path, "/exec") {
			method = http.MethodPost
		}
		t.Run(tc.name, func(t *testing.T) {
			a := e.do(t, method, tc.path, strings.NewReader(tc.body), nil)
			require.Equal(t, tc.status, a.status)
			require.Equal(t, tc.code, a.code)
			require.Contains(t, a.msg, tc.msg)
		})
	}
	require.Empty(t, e.svc.Calls())
}

// TestBadSessionID pins the API's answer to a malformed path id, byte for
// byte: the path is where an id is parsed (domain.ParseSessionID), and the
// layers below take a domain.ID that cannot be malformed.
func TestBadSessionID(t *testing.T) {
	t.Parallel()
	e := newAPI(t, APIOptions{Token: apiToken})
	for path, msg := range map[string]string{
		"/v1/sessions/Bad-Id":                     `invalid request: id: invalid id "Bad-Id": session id may hold only lower-case letters, digits and inner '_' (offset 0)`,
		"/v1/sessions/ses_x_/exec":                `invalid request: id: invalid id "ses_x_": session id may hold only lower-case letters, digits and inner '_' (offset 5)`,
		"/v1/sessions/" + strings.Repeat("a", 55): `invalid request: id: invalid id "` + strings.Repeat("a", 55) + `": session id longer than 54 characters`,
	} {
		method := http.MethodGet
		if strings.HasSuffix(path, "/exec") {
			method = http.MethodPost
		}
		a := e.do(t, method, path, strings.NewReader(`{"command":"true"}`), nil)
		require.Equal(t, http.StatusBadRequest, a.status, path)
		require.Equal(t, CodeInvalidArgument, a.code, path)
		require.Equal(t, msg, a.msg, path)
	}
	require.Empty(t, e.svc.Calls(), "a bad id reaches no service call")
}
