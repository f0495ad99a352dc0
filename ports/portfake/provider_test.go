package portfake_test

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/ports"
	"github.com/sandgate/sandgate/ports/portfake"
)

// issuer is a GateTokenIssuer that logs its calls, with the provider's
// sandboxes as it saw them at each revoke.
type issuer struct {
	prov       *portfake.Provider
	mu         sync.Mutex
	log        []string
	persistErr error
	revokeErr  error
	// boxAtRevoke reports whether the session's sandbox still existed when
	// its token was revoked.
	boxAtRevoke []bool
}

var _ ports.GateTokenIssuer = (*issuer)(nil)

func (i *issuer) Generate() string {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.log = append(i.log, "generate")
	return "sgt_test"
}

func (i *issuer) Persist(_ context.Context, sid domain.ID, tok string) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.log = append(i.log, "persist "+sid.String()+" "+tok)
	return i.persistErr
}

func (i *issuer) Revoke(_ context.Context, sid domain.ID) error {
	present := i.prov.Box(sid) != nil
	i.mu.Lock()
	defer i.mu.Unlock()
	i.log = append(i.log, "revoke "+sid.String())
	i.boxAtRevoke = append(i.boxAtRevoke, present)
	return i.revokeErr
}

func withIssuer() (*portfake.Provider, *issuer) {
	p := portfake.NewProvider()
	iss := &issuer{prov: p}
	p.Tokens = iss
	return p, iss
}

func gated(sid domain.ID) sandbox.Spec {
	return sandbox.Spec{SessionID: sid, Gate: &sandbox.GateSpec{Image: "gate"}}
}

func TestProvisionAttachOwned(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := portfake.NewProvider()
	_, err := p.Attach(ctx, domain.MustParseSessionID("ses_b"))
	require.ErrorIs(t, err, sandbox.ErrNotFound, "never provisioned")

	sb, err := p.Provision(ctx, sandbox.Spec{SessionID: domain.MustParseSessionID("ses_b")})
	require.NoError(t, err)
	require.Equal(t, "ctr-ses_b", sb.ID())
	again, err := p.Provision(ctx, sandbox.Spec{SessionID: domain.MustParseSessionID("ses_b")})
	require.NoError(t, err)
	require.Same(t, sb, again, "a second provision adopts the sandbox")
	got, err := p.Attach(ctx, domain.MustParseSessionID("ses_b"))
	require.NoError(t, err)
	require.Same(t, sb, got)

	p.Stop(domain.MustParseSessionID("ses_b"))
	p.Stop(domain.MustParseSessionID("ses_a")) // an orphan: assets without a sandbox that ever ran
	_, err = p.Attach(ctx, domain.MustParseSessionID("ses_b"))
	require.ErrorIs(t, err, sandbox.ErrNotFound, "stopped")
	owned, err := p.Owned(ctx)
	require.NoError(t, err)
	require.Equal(t, []domain.ID{domain.MustParseSessionID("ses_a"), domain.MustParseSessionID("ses_b")}, owned, "running or stopped, sorted")
	require.False(t, p.Box(domain.MustParseSessionID("ses_b")).Running())

	_, err = p.Provision(ctx, sandbox.Spec{SessionID: domain.MustParseSessionID("ses_b")})
	require.NoError(t, err)
	require.True(t, p.Box(domain.MustParseSessionID("ses_b")).Running(), "a provision starts a stopped sandbox")
	require.Len(t, p.Specs(), 3)
	require.Equal(t, 3, p.Calls(portfake.OpAttach), "refused calls included")
	require.Equal(t, 1, p.MaxInFlight())
}

func TestGatedProvisionMintsThroughTheIssuer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, err := portfake.NewProvider().Provision(ctx, gated(domain.MustParseSessionID("ses_a")))
	require.ErrorIs(t, err, portfake.ErrNoIssuer, "a gated spec without an issuer is refused")

	p, iss := withIssuer()
	_, err = p.Provision(ctx, sandbox.Spec{SessionID: domain.MustParseSessionID("ses_u")})
	require.NoError(t, err)
	require.Empty(t, iss.log, "an ungated provision mints nothing")
	_, err = p.Provision(ctx, gated(domain.MustParseSessionID("ses_a")))
	require.NoError(t, err)
	require.Equal(t, []string{"generate", "persist ses_a sgt_test"}, iss.log)
	require.Equal(t, "sgt_test", p.Token(domain.MustParseSessionID("ses_a")))

	boom := errors.New("store down")
	iss.persistErr = boom
	_, err = p.Provision(ctx, gated(domain.MustParseSessionID("ses_c")))
	require.ErrorIs(t, err, boom)
	require.Nil(t, p.Box(domain.MustParseSessionID("ses_c")), "nothing is left of a failed mint")
	require.Empty(t, p.Token(domain.MustParseSessionID("ses_c")))
}

func TestReapRevokesFirst(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p, iss := withIssuer()
	sb, err := p.Provision(ctx, gated(domain.MustParseSessionID("ses_a")))
	require.NoError(t, err)

	boom := errors.New("revoke failed")
	iss.revokeErr = boom
	require.ErrorIs(t, p.Reap(ctx, domain.MustParseSessionID("ses_a")), boom)
	require.NotNil(t, p.Box(domain.MustParseSessionID("ses_a")), "a failed revoke removes nothing")
	require.Empty(t, p.Reaped())

	iss.revokeErr = nil
	require.NoError(t, p.Reap(ctx, domain.MustParseSessionID("ses_a")))
	require.Equal(t, []bool{true, true}, iss.boxAtRevoke, "the token is revoked while the sandbox exists")
	require.Equal(t, []domain.ID{domain.MustParseSessionID("ses_a")}, p.Reaped())
	require.Nil(t, p.Box(domain.MustParseSessionID("ses_a")))
	require.Empty(t, p.Token(domain.MustParseSessionID("ses_a")))
	_, err = sb.Exec(ctx, sandbox.ExecRequest{Command: "true"})
	require.ErrorIs(t, err, sandbox.ErrNotFound, "a reaped sandbox's handle is dead")
	require.ErrorIs(t, sb.WriteFiles(ctx, nil), sandbox.ErrNotFound)
	require.NoError(t, p.Reap(ctx, domain.MustParseSessionID("ses_none")), "reaping nothing is a no-op")
}

func TestFailAndFailNext(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := portfake.NewProvider()
	boom := errors.New("boom")
	p.FailNext(portfake.OpProvision, 2, boom)
	for range 2 {
		_, err := p.Provision(ctx, sandbox.Spec{SessionID: domain.MustParseSessionID("ses_a")})
		require.ErrorIs(t, err, boom)
	}
	require.Nil(t, p.Box(domain.MustParseSessionID("ses_a")), "a failed provision creates nothing")
	sb, err := p.Provision(ctx, sandbox.Spec{SessionID: domain.MustParseSessionID("ses_a")})
	require.NoError(t, err, "the third one passes")
	require.Equal(t, 3, p.Calls(portfake.OpProvision), "failed calls are counted")
	require.Len(t, p.Specs(), 3, "and recorded")

	p.Fail(portfake.OpWriteFiles, boom)
	for range 3 {
		require.ErrorIs(t, sb.WriteFiles(ctx, []sandbox.FileWrite{{Path: "/w/a", Data: []byte("a")}}), boom)
	}
	require.Nil(t, p.Box(domain.MustParseSessionID("ses_a")).File("/w/a"))
	p.Fail(portfake.OpWriteFiles, nil)
	require.NoError(t, sb.WriteFiles(ctx, []sandbox.FileWrite{{Path: "/w/a", Data: []byte("a")}}))
	require.Equal(t, "a", string(p.Box(domain.MustParseSessionID("ses_a")).File("/w/a")))

	p.Fail(portfake.OpExport, boom)
	_, err = p.Export(ctx, domain.MustParseSessionID("ses_a"), "/w")
	require.ErrorIs(t, err, boom)
	p.Fail(portfake.OpOwned, boom)
	_, err = p.Owned(ctx)
	require.ErrorIs(t, err, boom)
	require.Equal(t, 1, p.Calls(portfake.OpOwned))
}

func TestHookRunsFirstAndItsErrorIsTheAnswer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := portfake.NewProvider()
	sb, err := p.Provision(ctx, sandbox.Spec{SessionID: domain.MustParseSessionID("ses_a")})
	require.NoError(t, err)
	var seen []domain.ID
	p.Hook(portfake.OpExec, func(_ context.Context, sid domain.ID) error {
		seen = append(seen, sid)
		return nil
	})
	_, err = sb.Exec(ctx, sandbox.ExecRequest{Command: "true"})
	require.NoError(t, err)
	require.Equal(t, []domain.ID{domain.MustParseSessionID("ses_a")}, seen, "a sandbox's hook gets its session")

	boom := errors.New("hooked")
	p.Hook(portfake.OpExec, func(context.Context, domain.ID) error { return boom })
	_, err = sb.Exec(ctx, sandbox.ExecRequest{Command: "true"})
	require.ErrorIs(t, err, boom)
	require.Len(t, p.Box(domain.MustParseSessionID("ses_a")).Execs(), 1, "a refused exec is not run")
	p.Hook(portfake.OpExec, nil)
	_, err = sb.Exec(ctx, sandbox.ExecRequest{Command: "true"})
	require.NoError(t, err)
}

func TestGateHoldsUntilReleased(t *testing.T) {
	t.Parallel()
	p := portfake.NewProvider()
	gate := portfake.NewGate()
	p.Hook(portfake.OpProvision, gate.Hook)
	done := make(chan error, 2)
	for _, sid := range []domain.ID{domain.MustParseSessionID("ses_a"), domain.MustParseSessionID("ses_a")} {
		go func() {
			_, err := p.Provision(context.Background(), sandbox.Spec{SessionID: sid})
			done <- err
		}()
	}
	for range 2 {
		select {
		case sid := <-gate.Entered():
			require.Equal(t, domain.MustParseSessionID("ses_a"), sid)
		case <-time.After(5 * time.Second):
			t.Fatal("no provision reached the gate")
		}
	}
	select {
	case err := <-done:
		t.Fatalf("a provision passed a closed gate: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	require.Equal(t, 2, p.MaxInFlight(), "both are inside Provision")
	gate.Release()
	gate.Release() // twice is fine
	require.NoError(t, <-done)
	require.NoError(t, <-done)
	require.NotNil(t, p.Box(domain.MustParseSessionID("ses_a")))
}

func TestGateReportsACancelledWait(t *testing.T) {
	t.Parallel()
	p := portfake.NewProvider()
	gate := portfake.NewGate()
	p.Hook(portfake.OpOwned, gate.Hook)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := p.Owned(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Equal(t, domain.ID{}, <-gate.Entered(), "Owned has no session")
	select {
	case <-gate.Cancelled():
	default:
		t.Fatal("the cancelled wait was not reported")
	}
}

func TestSandboxFilesExecAndExport(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := portfake.NewProvider()
	sb, err := p.Provision(ctx, sandbox.Spec{SessionID: domain.MustParseSessionID("ses_a")})
	require.NoError(t, err)

	res, err := sb.Exec(ctx, sandbox.ExecRequest{Command: "echo hi"})
	require.NoError(t, err)
	require.Equal(t, sandbox.ExecResult{Stdout: "echo hi", ExitCode: 3}, res, "an echo with exit 3")
	res, err = sb.Exec(ctx, sandbox.ExecRequest{Command: "set -e\ntrue"})
	require.NoError(t, err)
	require.Equal(t, sandbox.ExecResult{}, res, "a restore script succeeds")
	require.Len(t, p.Box(domain.MustParseSessionID("ses_a")).Execs(), 2)

	require.NoError(t, sb.WriteFile(ctx, "/w/a.txt", []byte("alpha")))
	require.NoError(t, sb.WriteFileStream(ctx, "/w/d/run.sh", io.MultiReader(
		strings.NewReader("#!/bin/sh"), strings.NewReader("ignored past the size")), 9))
	require.NoError(t, sb.WriteFiles(ctx, []sandbox.FileWrite{{Path: "/w/empty"}, {Path: "/other", Data: []byte("x")}}))
	data, err := sb.ReadFile(ctx, "/w/a.txt")
	require.NoError(t, err)
	require.Equal(t, "alpha", string(data))
	_, err = sb.ReadFile(ctx, "/nope")
	require.ErrorIs(t, err, sandbox.ErrFileNotExist)
	_, _, err = sb.ReadFileStream(ctx, "/w/a.txt", 4)
	require.ErrorIs(t, err, sandbox.ErrFileTooLarge)
	rc, n, err := sb.ReadFileStream(ctx, "/w/a.txt", 5)
	require.NoError(t, err)
	require.Equal(t, int64(5), n)
	require.NoError(t, rc.Close())
	require.Equal(t, []byte{}, p.Box(domain.MustParseSessionID("ses_a")).File("/w/empty"), "an empty member is an empty file")

	p.Stop(domain.MustParseSessionID("ses_a"))
	rc, err = p.Export(ctx, domain.MustParseSessionID("ses_a"), "/w")
	require.NoError(t, err, "a stopped sandbox exports too")
	defer func() { _ = rc.Close() }()
	var members []string
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		members = append(members, h.Name+" "+h.FileInfo().Mode().Perm().String())
	}
	require.Equal(t, []string{"w/ -rwxr-xr-x", "w/a.txt -rw-r--r--", "w/d/run.sh -rwxr-xr-x", "w/empty -rw-r--r--"}, members)
	_, err = p.Export(ctx, domain.MustParseSessionID("ses_none"), "/w")
	require.ErrorIs(t, err, sandbox.ErrNotFound)
}
