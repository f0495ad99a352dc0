package httpapi

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/gatewire"
	"github.com/sandgate/sandgate/core/session"
	"github.com/sandgate/sandgate/ports"
	"github.com/sandgate/sandgate/ports/portfake"
)

// The session bodies' bytes are the API (openapi.json): these pin them, in
// both directions, so a change of the types behind them cannot move a key.
const (
	fullRequestJSON = `{"image":"alpine:3","workdir":"/src",` +
		`"networking":{"type":"limited","allowed_hosts":["a.com","*.b.com:443"]},` +
		`"env":{"A":"1","B":""},` +
		`"credentials":[{"id":"c1","name":"KEY","secret":"s3cret-value","allowed_hosts":["a.com"],"locations":["headers","body"]}]}`
	emptyRequestJSON = `{"networking":{"type":""}}`
	infoJSON         = `{"id":"ses_test","sandbox_id":"ctr1","image":"img:1","workdir":"/workspace",` +
		`"networking":{"type":"limited","allowed_hosts":["api.example.com"]},"gated":true,"state":"running"}`
	listJSON = `{"sessions":[{"id":"ses_a","sandbox_id":"ctr1","image":"img:1","workdir":"/workspace",` +
		`"networking":{"type":"limited","allowed_hosts":["api.example.com"]},"gated":true,"state":"running"},` +
		`{"id":"ses_b","gated":false,"state":"stopped"}]}`
)

func fullRequest() session.Request {
	return session.Request{
		Image: "alpine:3", Workdir: "/src",
		Networking: domain.Networking{Type: domain.NetLimited, AllowedHosts: []string{"a.com", "*.b.com:443"}},
		Env:        map[string]string{"A": "1", "B": ""},
		Credentials: []session.Credential{{
			ID: "c1", Name: "KEY", Secret: gatewire.NewSecret("s3cret-value"), AllowedHosts: []string{"a.com"},
			Locations: []gatewire.Location{gatewire.LocationHeaders, gatewire.LocationBody},
		}},
	}
}

// sameBytes requires an answer byte for byte. JSONEq would let the keys
// move, and their order is part of what the API's clients see.
func sameBytes(t *testing.T, want string, got []byte, what string) {
	t.Helper()
	require.Equal(t, want, string(got), what) //nolint:testifylint // byte for byte, not JSON-equal (above)
}

func TestSessionWireServer(t *testing.T) {
	t.Parallel()
	e := newAPI(t, APIOptions{Token: apiToken})
	a := e.do(t, http.MethodPut, "/v1/sessions/"+sid.String(), strings.NewReader(fullRequestJSON), nil)
	require.Equal(t, http.StatusOK, a.status, string(a.body))
	sameBytes(t, infoJSON, a.body, "a session's answer")
	require.Equal(t, fullRequest(), e.svc.Request(), "the body as the service gets it")

	a = e.do(t, http.MethodPut, "/v1/sessions/"+sid.String(), strings.NewReader(`{}`), nil)
	require.Equal(t, http.StatusOK, a.status, string(a.body))
	require.Equal(t, session.Request{}, e.svc.Request(), "an empty body is the zero request")

	a = e.do(t, http.MethodGet, "/v1/sessions/"+sid.String(), nil, nil)
	sameBytes(t, infoJSON, a.body, "GET's answer")
	a = e.do(t, http.MethodGet, "/v1/sessions", nil, nil)
	sameBytes(t, listJSON, a.body, "the list's answer")
}

func TestSessionWireClient(t *testing.T) {
	t.Parallel()
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = append(got, string(b))
		w.Header().Set("Content-Type", "application/json")
		body := infoJSON
		if r.URL.Path == "/v1/sessions" {
			body = listJSON
		}
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	c, err := NewClient(srv.URL, "", srv.Client())
	require.NoError(t, err)

	in, err := c.Provision(t.Context(), sid, fullRequest())
	require.NoError(t, err)
	require.Equal(t, portfake.Info(sid), in, "the answer as the caller gets it")
	_, err = c.Provision(t.Context(), sid, session.Request{})
	require.NoError(t, err)
	require.Equal(t, []string{fullRequestJSON, emptyRequestJSON}, got, "the bodies the client sends, byte for byte")

	list, err := c.List(t.Context())
	require.NoError(t, err)
	require.Equal(t, []ports.SessionInfo{portfake.Info(domain.MustParseSessionID("ses_a")), {ID: domain.MustParseSessionID("ses_b"), State: ports.StateStopped}}, list)
}
