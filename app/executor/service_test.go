package executor

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/adapters/sessionstore"
	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/egress"
	"github.com/sandgate/sandgate/core/gatewire"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/core/session"
	"github.com/sandgate/sandgate/ports"
	"github.com/sandgate/sandgate/ports/portfake"
)

const secret = "ghp_0123456789abcdefSECRET"

var defaults = session.Defaults{
	Image: "debian:bookworm", GateImage: "sandgate/gate:dev", ControlplaneURL: "http://172.17.0.1:7070",
}

type env struct {
	svc   *Service
	prov  *portfake.Provider
	store *sessionstore.Store
}

func newEnv(t testing.TB) *env {
	t.Helper()
	store, err := sessionstore.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "store.db"), bytes.Repeat([]byte{7}, session.KeyLen))
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	prov := portfake.NewProvider()
	prov.Tokens = store // as cmd/executor wires it: the provider's tokens are the store
	return &env{svc: New(prov, store, defaults), prov: prov, store: store}
}

// provisioned returns an env with one session provisioned from req.
func provisioned(t *testing.T, req session.Request) (*env, domain.ID) {
	t.Helper()
	e := newEnv(t)
	sid := domain.NewID("ses")
	_, err := e.svc.Provision(context.Background(), sid, req)
	require.NoError(t, err)
	return e, sid
}

func gatedRequest() session.Request {
	return session.Request{
		Image:      "alpine:3",
		Networking: domain.Networking{Type: domain.NetLimited, AllowedHosts: []string{"api.github.com"}},
		Env:        map[string]string{"A": "1"},
		Credentials: []session.Credential{{
			ID: "cred_gh", Name: "GITHUB_TOKEN", Secret: gatewire.NewSecret(secret), AllowedHosts: []string{"api.github.com"},
			Locations: []gatewire.Location{gatewire.LocationHeaders},
		}},
	}
}

func TestProvisionGated(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	sid := domain.NewID("ses")
	info, err := e.svc.Provision(ctx, sid, gatedRequest())
	require.NoError(t, err)
	limited := domain.Networking{Type: domain.NetLimited, AllowedHosts: []string{"api.github.com"}}
	require.Equal(t, ports.SessionInfo{
		ID: sid, SandboxID: "ctr-" + sid.String(), Image: "alpine:3", Workdir: sandbox.DefaultWorkdir, Isolation: sandbox.IsolationRunc,
		Networking: &limited, Gated: true, State: ports.StateRunning,
	}, info)

	require.Len(t, e.prov.Specs(), 1)
	spec := e.prov.Specs()[0]
	require.NotNil(t, spec.Gate)
	require.Equal(t, map[string]string{"A": "1", "GITHUB_TOKEN": egress.Placeholder(sid, "GITHUB_TOKEN")}, spec.Env)

	rec, err := e.store.GetSession(ctx, sid)
	require.NoError(t, err)
	require.Equal(t, gatewire.NewSecret(secret), rec.Credentials[0].Secret)
	require.Equal(t, limited, rec.Networking)

	got, err := e.svc.Get(ctx, sid)
	require.NoError(t, err)
	require.Equal(t, info, got)
	// Another executor sharing the store knows the image and workdir too.
	other := New(e.prov, e.store, defaults)
	got, err = other.Get(ctx, sid)
	require.NoError(t, err)
	require.Equal(t, info, got)
}

func TestProvisionInvalidTouchesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sid := domain.NewID("ses")
	req := gatedRequest()
	req.Env["LD_PRELOAD"] = "/x.so"
	_, err := e.svc.Provision(context.Background(), sid, req)
	require.ErrorIs(t, err, session.ErrInvalidRequest)
	require.Empty(t, e.prov.Specs())
	_, err = e.store.GetSession(context.Background(), sid)
	require.ErrorIs(t, err, session.ErrNotFound)
}

func TestProvisionFailureRestoresTheRecord(t *testing.T) {
	t.Parallel()
	e, sid := provisioned(t, gatedRequest())
	ctx := context.Background()
	var err error

	e.prov.Fail(portfake.OpProvision, sandbox.ErrSpecMismatch)
	changed := gatedRequest()
	changed.Credentials[0].AllowedHosts = []string{"evil.example"}
	_, err = e.svc.Provision(ctx, sid, changed)
	require.ErrorIs(t, err, sandbox.ErrSpecMismatch)
	rec, err := e.store.GetSession(ctx, sid)
	require.NoError(t, err)
	require.Equal(t, []string{"api.github.com"}, rec.Credentials[0].AllowedHosts, "a refused re-provision changed the record")

	fresh := domain.NewID("ses")
	_, err = e.svc.Provision(ctx, fresh, gatedRequest())
	require.ErrorIs(t, err, sandbox.ErrSpecMismatch)
	_, err = e.store.GetSession(ctx, fresh)
	require.ErrorIs(t, err, session.ErrNotFound, "a failed first provision left its record")
}

func TestDelete(t *testing.T) {
	t.Parallel()
	e, sid := provisioned(t, gatedRequest())
	ctx := context.Background()
	var err error
	token := e.store.Generate()
	require.NoError(t, e.store.Persist(ctx, sid, token))

	require.ErrorIs(t, e.svc.Delete(ctx, sid, true), ports.ErrNotImplemented)
	_, err = e.store.Authenticate(ctx, token)
	require.NoError(t, err, "a refused delete revoked the token")
	require.Empty(t, e.prov.Reaped())

	require.NoError(t, e.svc.Delete(ctx, sid, false))
	_, err = e.store.Authenticate(ctx, token)
	require.ErrorIs(t, err, gatewire.ErrUnauthorized)
	_, err = e.store.GetSession(ctx, sid)
	require.ErrorIs(t, err, session.ErrNotFound)
	require.Equal(t, []domain.ID{sid}, e.prov.Reaped())
	_, err = e.svc.Get(ctx, sid)
	require.ErrorIs(t, err, sandbox.ErrNotFound)

	require.NoError(t, e.svc.Delete(ctx, sid, false), "delete is idempotent")
}

func TestList(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	a, b := domain.MustParseSessionID("ses_a"), domain.MustParseSessionID("ses_b")
	_, err := e.svc.Provision(ctx, b, session.Request{})
	require.NoError(t, err)
	_, err = e.svc.Provision(ctx, a, session.Request{})
	require.NoError(t, err)
	e.prov.Stop(b)
	list, err := e.svc.List(ctx)
	require.NoError(t, err)
	unrestricted := domain.Networking{Type: domain.NetUnrestricted}
	require.Equal(t, []ports.SessionInfo{
		{ID: a, SandboxID: "ctr-ses_a", Image: "debian:bookworm", Workdir: sandbox.DefaultWorkdir, Isolation: sandbox.IsolationRunc, Networking: &unrestricted, State: ports.StateRunning},
		{ID: b, State: ports.StateStopped},
	}, list)
}

func TestSandboxCalls(t *testing.T) {
	t.Parallel()
	e, sid := provisioned(t, session.Request{})
	ctx := context.Background()

	res, err := e.svc.Exec(ctx, sid, sandbox.ExecRequest{Command: "echo hi", Timeout: time.Second})
	require.NoError(t, err)
	require.Equal(t, sandbox.ExecResult{Stdout: "echo hi", ExitCode: 3}, res)

	require.NoError(t, e.svc.WriteFile(ctx, sid, "/w/a", bytes.NewReader([]byte("abc")), 3))
	require.NoError(t, e.svc.WriteFiles(ctx, sid, []sandbox.FileWrite{{Path: "/w/b", Data: []byte("b")}}))
	rc, size, err := e.svc.ReadFile(ctx, sid, "/w/a", 10)
	require.NoError(t, err)
	data, err := io.ReadAll(rc)
	require.NoError(t, err)
	require.NoError(t, rc.Close())
	require.Equal(t, int64(3), size)
	require.Equal(t, "abc", string(data))
	_, _, err = e.svc.ReadFile(ctx, sid, "/w/a", 2)
	require.ErrorIs(t, err, sandbox.ErrFileTooLarge)
	require.Equal(t, []byte("b"), e.prov.Box(sid).File("/w/b"))

	rc, err = e.svc.Export(ctx, sid, "/w")
	require.NoError(t, err)
	require.Equal(t, []string{"w/", "w/a", "w/b"}, tarNames(t, rc))
	require.NoError(t, rc.Close())

	missing := domain.NewID("ses")
	_, err = e.svc.Exec(ctx, missing, sandbox.ExecRequest{Command: "true"})
	require.ErrorIs(t, err, sandbox.ErrNotFound)
}

func TestRefusedBeforeTheSandbox(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	sid := domain.NewID("ses")
	for _, tc := range []struct {
		name string
		call func() error
		want string
	}{
		// A malformed id is unrepresentable (domain.ID): the HTTP edge refuses
		// it (httpapi's tests), so it has no row here.
		{"exec negative timeout", func() error { _, err := e.svc.Exec(ctx, sid, sandbox.ExecRequest{Timeout: -1}); return err }, "negative"},
		{"read relative", func() error { _, _, err := e.svc.ReadFile(ctx, sid, "a", 1); return err }, "path: path \"a\""},
		{"read zero max", func() error { _, _, err := e.svc.ReadFile(ctx, sid, "/a", 0); return err }, "max_bytes"},
		{"write negative size", func() error { return e.svc.WriteFile(ctx, sid, "/a", nil, -1) }, "size:"},
		{"write bad path", func() error { return e.svc.WriteFile(ctx, sid, "/a/", nil, 0) }, "not clean"},
		{"batch bad member", func() error {
			return e.svc.WriteFiles(ctx, sid, []sandbox.FileWrite{{Path: "/a"}, {Path: "rel"}})
		}, "files[1].path"},
		{"export root /", func() error { _, err := e.svc.Export(ctx, sid, "/"); return err }, "root \"/\""},
		{"stat relative", func() error { _, err := e.svc.Stat(ctx, sid, "a"); return err }, "not absolute"},
		{"list unclean", func() error { _, err := e.svc.ListDir(ctx, sid, "/a/"); return err }, "not clean"},
		{"remove /", func() error { return e.svc.Remove(ctx, sid, "/", true) }, "refusing to remove the root"},
		{"mkdir empty", func() error { return e.svc.Mkdir(ctx, sid, "", true) }, "path: empty"},
	} {
		err := tc.call()
		require.ErrorIs(t, err, session.ErrInvalidRequest, tc.name)
		require.ErrorContains(t, err, tc.want, tc.name)
	}
	require.Zero(t, e.prov.Calls(portfake.OpAttach), "a refused call reached the provider")
}

// TestProvisionsSerialisedPerSession holds the first provision of a session
// inside the provider and checks that a second one for the same session
// waits for it while one for another session does not.
func TestProvisionsSerialisedPerSession(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	gate := portfake.NewGate()
	e.prov.Hook(portfake.OpProvision, gate.Hook)
	a, b := domain.NewID("ses"), domain.NewID("ses")
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for _, sid := range []domain.ID{a, a, b} {
		wg.Go(func() {
			_, err := e.svc.Provision(ctx, sid, session.Request{})
			errs <- err
		})
	}
	got := []domain.ID{waitFor(t, gate.Entered()), waitFor(t, gate.Entered())}
	require.ElementsMatch(t, []domain.ID{a, b}, got, "the two sessions must provision concurrently")
	select {
	case sid := <-gate.Entered():
		t.Fatalf("a second provision of %s entered the provider while the first was in it", sid)
	case <-time.After(50 * time.Millisecond):
	}
	gate.Release()
	require.Equal(t, a, waitFor(t, gate.Entered()))
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, 1, e.prov.MaxInFlight())
	require.Zero(t, e.svc.locks.held(), "lock entries leaked")
}

func waitFor(t *testing.T, ch <-chan domain.ID) domain.ID {
	t.Helper()
	select {
	case sid := <-ch:
		return sid
	case <-time.After(5 * time.Second):
		t.Fatal("no provision entered the provider within 5s")
		return domain.ID{}
	}
}

func TestStoreFailure(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	require.NoError(t, e.store.Close())
	_, err := e.svc.Provision(context.Background(), domain.NewID("ses"), gatedRequest())
	require.Error(t, err)
	require.NotErrorIs(t, err, session.ErrInvalidRequest)
	require.NotContains(t, err.Error(), secret)
	require.Empty(t, e.prov.Specs())
}

// tarNames returns the member names of a tar stream.
func tarNames(t *testing.T, r io.Reader) []string {
	t.Helper()
	var names []string
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return names
		}
		require.NoError(t, err)
		names = append(names, h.Name)
	}
}
