//go:build integration

package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/adapters/httpapi"
	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/gatewire"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/core/session"
	"github.com/sandgate/sandgate/internal/testworld"
)

// requireAPIError asserts err is the API's answer with status and code, the
// sentinel matches across the wire, and the message names no host path.
func requireAPIError(t *testing.T, err error, status int, code string, sentinel error) {
	t.Helper()
	var apiErr *httpapi.APIError
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, status, apiErr.Status, apiErr.Message)
	require.Equal(t, code, apiErr.Code, apiErr.Message)
	require.ErrorIs(t, err, sentinel)
	require.NotContains(t, apiErr.Message, "/var/lib/docker")
	require.NotContains(t, apiErr.Message, "overlay2")
}

// requireNoContainers asserts that nothing of sid is left on the engine.
func requireNoContainers(t *testing.T, env *testworld.Env, sid domain.ID) {
	t.Helper()
	f := filters.NewArgs(filters.Arg("label", sandbox.LabelSession+"="+sid.String()))
	left, err := env.Cli.ContainerList(context.Background(), container.ListOptions{All: true, Filters: f})
	require.NoError(t, err)
	require.Empty(t, left, "a refused provision leaves nothing of %s", sid)
}

// TestAPIClientMistakes (issue 11, items 8 and 9): each mistake of a client
// is a 4xx with a stable code and the reason, never 500 "internal", and a
// refused PUT leaves nothing behind.
func TestAPIClientMistakes(t *testing.T) {
	env := testworld.New(t)
	_, c := api(t, env)
	ctx := ctxFor(t)
	gateUID := env.BuildGateVariant(t, "gateuid", fmt.Sprintf("USER %d\n", gatewire.UID), nil, "debian:bookworm")
	limited := domain.Networking{Type: domain.NetLimited, AllowedHosts: []string{env.Origin.IPv4.String()}}

	for _, tc := range []struct {
		name   string
		req    session.Request
		status int
		code   string
		want   error
	}{
		{"invalid image reference", session.Request{Image: "Sandgate/UPPER-case:1"},
			http.StatusUnprocessableEntity, httpapi.CodeImageUnavailable, sandbox.ErrImageUnavailable},
		// A registry on loopback that refuses the connection: no traffic
		// leaves the machine.
		{"unpullable image", session.Request{Image: "127.0.0.1:1/sandgate-absent:1"},
			http.StatusUnprocessableEntity, httpapi.CodeImageUnavailable, sandbox.ErrImageUnavailable},
		{"image without bash", session.Request{Image: "busybox:1.35"},
			http.StatusUnprocessableEntity, httpapi.CodeImageUnusable, sandbox.ErrImageUnusable},
		{"workdir is a file", session.Request{Image: "debian:bookworm", Workdir: "/etc/passwd"},
			http.StatusUnprocessableEntity, httpapi.CodeInvalidWorkdir, sandbox.ErrInvalidWorkdir},
		{"workdir under a file", session.Request{Image: "debian:bookworm", Workdir: "/etc/passwd/w"},
			http.StatusUnprocessableEntity, httpapi.CodeInvalidWorkdir, sandbox.ErrInvalidWorkdir},
		{"gated image runs as the gate uid", session.Request{Image: gateUID, Networking: limited},
			http.StatusUnprocessableEntity, httpapi.CodeGateUIDImage, sandbox.ErrGateUIDImage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sid := domain.NewID("ses")
			_, err := c.Provision(ctx, sid, tc.req)
			requireAPIError(t, err, tc.status, tc.code, tc.want)
			requireNoContainers(t, env, sid)
			_, err = c.Get(ctx, sid)
			require.ErrorIs(t, err, sandbox.ErrNotFound, "a refused PUT is not a session")
		})
	}

	// In a running session: a read the sandbox's user may not make, an
	// export whose root lies under a file.
	sid := domain.NewID("ses")
	nonRoot := env.BuildGateVariant(t, "nobody", "USER 65534\n", nil, "debian:bookworm")
	_, err := c.Provision(ctx, sid, session.Request{Image: nonRoot})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Delete(context.WithoutCancel(ctx), sid, false) })
	_, _, err = c.ReadFile(ctx, sid, "/etc/shadow", 0)
	requireAPIError(t, err, http.StatusUnprocessableEntity, httpapi.CodeNotReadable, sandbox.ErrNotReadable)
	require.ErrorContains(t, err, "Permission denied")
	_, err = c.Export(ctx, sid, "/etc/passwd/x")
	requireAPIError(t, err, http.StatusUnprocessableEntity, httpapi.CodeNotDirectory, sandbox.ErrNotDirectory)
	require.NotErrorIs(t, err, sandbox.ErrNotFound)
}
