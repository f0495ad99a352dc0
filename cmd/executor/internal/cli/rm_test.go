package cli

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/adapters/httpapi"
	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/ports"
	"github.com/sandgate/sandgate/ports/portfake"
)

func TestRm(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := h.run("rm", "s1")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "removed session s1\n", r.stdout)
	r = h.run("rm", "--json", "s2")
	require.Equal(t, 0, r.code, r.stderr)
	require.JSONEq(t, `{"id":"s2","removed":true,"checkpoint":false}`, r.stdout)
	require.Equal(t, []bool{false, false}, h.svc.Deleted())
	// The fake, like today's service, refuses a checkpointing delete.
	r = h.run("rm", "s3", "--checkpoint")
	require.Equal(t, ExitFailure, r.code)
	require.Equal(t, "executor rm: this executor does not do that yet: not implemented yet\n", r.stderr)
	require.Equal(t, []string{"delete s1", "delete s2", "delete s3"}, h.svc.Calls())
}

func TestLs(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := h.run("ls")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "SESSION  STATE  IMAGE  NETWORK  GATED\n", r.stdout)
	r = h.run("ls", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	require.JSONEq(t, `{"sessions":[]}`, r.stdout)

	h.svc.Infos = []ports.SessionInfo{portfake.Info(domain.MustParseSessionID("s1")), {ID: domain.MustParseSessionID("s2"), State: ports.StateStopped}, {ID: domain.MustParseSessionID("s3"), State: ports.StateRunning,
		Image: "i", Networking: &domain.Networking{Type: domain.NetUnrestricted}}}
	r = h.run("ls")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "SESSION  STATE    IMAGE  NETWORK                   GATED\n"+
		"s1       running  img:1  limited: api.example.com  yes\n"+
		"s2       stopped  -      -                         no\n"+
		"s3       running  i      unrestricted              no\n", r.stdout)
	r = h.run("ls", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var got httpapi.SessionList
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &got))
	require.Equal(t, h.svc.Infos, got.Infos())
	r = h.run("ls", "extra")
	require.Equal(t, ExitUsage, r.code)
}
