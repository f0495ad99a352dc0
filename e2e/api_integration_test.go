//go:build integration

// Package e2e_test drives the executor's HTTP API end to end: the Go client,
// the API handler, the application service, the SQLite session store, the
// Docker provider and a real gate, with an origin the test starts itself
// (internal/testworld).
package e2e_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/adapters/docker"
	"github.com/sandgate/sandgate/adapters/httpapi"
	"github.com/sandgate/sandgate/app/executor"
	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/egress"
	"github.com/sandgate/sandgate/core/gatewire"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/core/session"
	"github.com/sandgate/sandgate/internal/testworld"
)

const apiToken = "e2e-api-token"

// api serves the executor's API over env's provider and store and returns
// its URL and a client of it.
func api(t *testing.T, env *testworld.Env) (string, *httpapi.Client) {
	t.Helper()
	svc := executor.New(env.Provider, env.Store, session.Defaults{Image: env.SandboxImage,
		GateImage: env.GateImage(t), ControlplaneURL: env.ControlplaneURL})
	srv := httptest.NewServer(httpapi.NewAPIHandler(svc, httpapi.APIOptions{Token: apiToken}))
	t.Cleanup(srv.Close)
	c, err := httpapi.NewClient(srv.URL, apiToken, nil)
	require.NoError(t, err)
	return srv.URL, c
}

func ctxFor(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	t.Cleanup(cancel)
	return c
}

// TestAPIGatedSession: a limited session with a credential, through the API:
// create, exec through the gate with the credential substituted at egress,
// file round trips, a batch, export, delete.
func TestAPIGatedSession(t *testing.T) {
	env := testworld.New(t)
	_, c := api(t, env)
	ctx := ctxFor(t)
	sid := domain.NewID("ses")
	origin := env.Origin.IPv4.String()
	const secret = "e2e-secret-value-0123"
	info, err := c.Provision(ctx, sid, session.Request{
		Networking: domain.Networking{Type: domain.NetLimited, AllowedHosts: []string{origin}},
		Credentials: []session.Credential{{ID: "api", Name: "API_KEY", Secret: gatewire.NewSecret(secret),
			AllowedHosts: []string{origin}, Locations: []gatewire.Location{gatewire.LocationHeaders}}},
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Delete(context.WithoutCancel(ctx), sid, false) })
	require.True(t, info.Gated)
	require.Equal(t, sandbox.DefaultWorkdir, info.Workdir)

	// The sandbox sees the placeholder; the origin receives the secret.
	res, err := c.Exec(ctx, sid, sandbox.ExecRequest{Command: `printf %s "$API_KEY"`, Timeout: time.Minute})
	require.NoError(t, err)
	require.Equal(t, egress.Placeholder(sid, "API_KEY"), res.Stdout)
	get := `exec 3<>/dev/tcp/127.0.0.1/15080 && printf 'GET http://` + origin + `/m/e2e-api HTTP/1.1\r\nHost: ` + origin +
		`\r\nAuthorization: Bearer %s\r\nConnection: close\r\n\r\n' "$API_KEY" >&3 && timeout 20 cat <&3`
	res, err = c.Exec(ctx, sid, sandbox.ExecRequest{Command: get, Timeout: time.Minute})
	require.NoError(t, err)
	require.Contains(t, res.Stdout, "200 OK", res.Stderr)
	require.NotContains(t, res.Stdout, secret, "the echo is redacted")
	recs := env.AwaitOriginRequests(t, "/m/e2e-api", 1)
	require.Len(t, recs, 1)
	require.Equal(t, []string{"Bearer " + secret}, recs[0].Headers["Authorization"])

	// Files: a streamed write and read, a batch, an export.
	payload := bytes.Repeat([]byte("sandgate "), 100_000)
	require.NoError(t, c.WriteFile(ctx, sid, "/workspace/big.txt", bytes.NewReader(payload), int64(len(payload))))
	rc, size, err := c.ReadFile(ctx, sid, "/workspace/big.txt", 0)
	require.NoError(t, err)
	got, err := io.ReadAll(rc)
	require.NoError(t, rc.Close())
	require.NoError(t, err)
	require.Equal(t, int64(len(payload)), size)
	require.Equal(t, payload, got)
	require.NoError(t, c.WriteFiles(ctx, sid, []sandbox.FileWrite{
		{Path: "/workspace/b/one", Data: []byte("1")}, {Path: "/workspace/b/two", Data: []byte("22")}}))
	exp, err := c.Export(ctx, sid, "/workspace/b")
	require.NoError(t, err)
	names := tarNames(t, exp)
	require.Contains(t, names, "b/one")
	require.Contains(t, names, "b/two")

	// Errors cross the wire as the sandbox's sentinels.
	_, _, err = c.ReadFile(ctx, sid, "/workspace/missing", 0)
	require.ErrorIs(t, err, sandbox.ErrFileNotExist)
	_, err = c.Provision(ctx, sid, session.Request{Image: "busybox:1.35",
		Networking: domain.Networking{Type: domain.NetLimited, AllowedHosts: []string{origin}}})
	require.ErrorIs(t, err, sandbox.ErrSpecMismatch)

	list, err := c.List(ctx)
	require.NoError(t, err)
	var listed []domain.ID
	for _, s := range list {
		listed = append(listed, s.ID)
	}
	require.Contains(t, listed, sid)

	// Delete removes the pair and revokes the gate's token.
	token := gateToken(ctx, t, env, sid)
	owner, err := env.Store.Authenticate(ctx, token)
	require.NoError(t, err)
	require.Equal(t, sid, owner)
	require.NoError(t, c.Delete(ctx, sid, false))
	_, err = c.Get(ctx, sid)
	require.ErrorIs(t, err, sandbox.ErrNotFound)
	_, err = env.Store.Authenticate(ctx, token)
	require.ErrorIs(t, err, gatewire.ErrUnauthorized, "the gate token is revoked with the session")
}

// TestAPIRefusesWithoutToken: the API is closed to a caller without the
// token, before anything is provisioned.
func TestAPIRefusesWithoutToken(t *testing.T) {
	env := testworld.New(t)
	srvURL, c := api(t, env)
	anon, err := httpapi.NewClient(srvURL, "", nil)
	require.NoError(t, err)
	sid := domain.NewID("ses")
	_, err = anon.Provision(ctxFor(t), sid, session.Request{})
	require.ErrorIs(t, err, httpapi.ErrUnauthorized)
	_, err = c.Get(ctxFor(t), sid)
	require.ErrorIs(t, err, sandbox.ErrNotFound, "nothing was provisioned")
}

// gateToken reads the token out of the session's gate container.
func gateToken(ctx context.Context, t *testing.T, env *testworld.Env, sid domain.ID) string {
	t.Helper()
	g, err := env.Cli.ContainerInspect(ctx, docker.GateName(sid.String()))
	require.NoError(t, err)
	for _, kv := range g.Config.Env {
		if v, ok := strings.CutPrefix(kv, "GATE_TOKEN="); ok {
			return v
		}
	}
	t.Fatal("the gate has no GATE_TOKEN")
	return ""
}

func tarNames(t *testing.T, rc io.ReadCloser) []string {
	t.Helper()
	defer func() { _ = rc.Close() }()
	var names []string
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return names
		}
		require.NoError(t, err)
		names = append(names, strings.TrimSuffix(h.Name, "/"))
	}
}
