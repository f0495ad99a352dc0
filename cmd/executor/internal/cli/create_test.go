package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/adapters/httpapi"
	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/gatewire"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/core/session"
	"github.com/sandgate/sandgate/ports/portfake"
)

func TestCreateSendsTheRequestAndPrintsTheSession(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.env["GH_TOKEN"] = "ghp_from_env_secret"
	h.stdin = strings.NewReader("stdin-secret-value\n")
	// Flags before and after the session id, as people type them.
	r := h.run("create", "--image", "img:1", "s1", "--workdir", "/w", "--limited", "api.example.com,pypi.org",
		"--env", "A=1", "--env", "B=x=y",
		"--credential", "id=gh,name=GH,secret-env=GH_TOKEN,hosts=api.example.com,pypi.org,locations=headers,body",
		"--credential", "id=oa,name=OA,secret-stdin,hosts=api.example.com,locations=headers")
	require.Equal(t, 0, r.code, r.stderr)
	require.Empty(t, r.stderr)
	require.Equal(t, "session  s1\nstate    running\nsandbox  ctr1\nimage    img:1\nworkdir  /workspace\n"+
		"network  limited: api.example.com\ngated    yes\n", r.stdout)
	require.Equal(t, session.Request{
		Image: "img:1", Workdir: "/w",
		Networking: domain.Networking{Type: domain.NetLimited, AllowedHosts: []string{"api.example.com", "pypi.org"}},
		Env:        map[string]string{"A": "1", "B": "x=y"},
		Credentials: []session.Credential{
			{ID: "gh", Name: "GH", Secret: gatewire.NewSecret("ghp_from_env_secret"), AllowedHosts: []string{"api.example.com", "pypi.org"},
				Locations: []gatewire.Location{gatewire.LocationHeaders, gatewire.LocationBody}},
			{ID: "oa", Name: "OA", Secret: gatewire.NewSecret("stdin-secret-value"), AllowedHosts: []string{"api.example.com"},
				Locations: []gatewire.Location{gatewire.LocationHeaders}},
		},
	}, h.svc.Request())
}

func TestCreateJSON(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := h.run("create", "s1", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var got httpapi.SessionResponse
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &got))
	require.Equal(t, portfake.Info(domain.MustParseSessionID("s1")), got.Info())
	require.Contains(t, r.stdout, `"sandbox_id": "ctr1"`, "the API's keys")
	require.Equal(t, session.Request{}, h.svc.Request(), "no flag means the executor's defaults, unrestricted")
}

func TestCreateEmptyLimitedMeansNoEgress(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := h.run("create", "s1", "--limited", "")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, domain.Networking{Type: domain.NetLimited}, h.svc.Request().Networking)
}

func TestCreateIsolation(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := h.run("create", "s1", "--isolation", "gvisor")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, sandbox.IsolationGVisor, h.svc.Request().Isolation)
}

func TestCreateUsageErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		args  []string
		stdin string
		want  string
	}{
		{"no session", []string{"create"}, "", "want 1 argument(s) (SESSION), got 0"},
		{"two sessions", []string{"create", "a", "b"}, "", "want 1 argument(s) (SESSION), got 2"},
		{"bad id", []string{"create", "Bad-Id"}, "", "session: invalid id"},
		{"unknown flag", []string{"create", "s1", "--nope"}, "", "flag provided but not defined: -nope"},
		{"env without =", []string{"create", "s1", "--env", "A"}, "", `--env "A": want NAME=VALUE`},
		{"unknown isolation", []string{"create", "s1", "--isolation", "kata"}, "", `--isolation: isolation "kata": want "runc" or "gvisor"`},
		{"env twice", []string{"create", "s1", "--env", "A=1", "--env", "A=2"}, "", "--env A: given twice"},
		{"secret in argv", []string{"create", "s1", "--credential", "id=a,name=A,secret=hunter2hunter2,hosts=h"}, "",
			"--credential #1: secret=… is refused: argv is visible to every local user"},
		{"no secret source", []string{"create", "s1", "--credential", "id=a,name=A,hosts=h"}, "",
			"--credential #1: name the secret's source: secret-env=VAR or secret-stdin"},
		{"unset env", []string{"create", "s1", "--credential", "id=a,name=A,secret-env=NOPE"}, "",
			"--credential #1: secret-env=NOPE: the variable is unset or empty"},
		{"both sources", []string{"create", "s1", "--credential", "id=a,secret-env=X,secret-stdin"}, "x",
			"--credential #1: secret-env and secret-stdin both given"},
		{"stdin twice", []string{"create", "s1", "--credential", "id=a,secret-stdin", "--credential", "id=b,secret-stdin"}, "x",
			"--credential #2: only one credential can read its secret from stdin"},
		{"empty stdin", []string{"create", "s1", "--credential", "id=a,secret-stdin"}, "\n", "--credential #1: secret-stdin: stdin is empty"},
		{"unknown key", []string{"create", "s1", "--credential", "id=a,colour=red"}, "", `--credential #1: unknown key "colour"`},
		{"bare item", []string{"create", "s1", "--credential", "oops,id=a"}, "", "--credential #1: item 1: want key=value"},
		{"bare item later", []string{"create", "s1", "--credential", "id=a,name=B,oops"}, "", "--credential #1: item 3: want key=value"},
		{"stdin with a value", []string{"create", "s1", "--credential", "id=a,secret-stdin=x"}, "", "--credential #1: secret-stdin takes no value"},
		{"key twice", []string{"create", "s1", "--credential", "id=a,id=b"}, "", "--credential #1: key id given twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			h.stdin = strings.NewReader(tc.stdin)
			r := h.run(tc.args...)
			require.Equal(t, ExitUsage, r.code)
			require.Contains(t, r.stderr, "executor create: "+tc.want)
			require.Contains(t, r.stderr, "\nusage: executor create SESSION")
			require.NotContains(t, r.stderr, "hunter2", "a secret is never quoted back")
			require.Empty(t, r.stdout)
			require.Empty(t, h.svc.Calls(), "a usage error calls nothing")
		})
	}
}

func TestCreateNeverShowsTheSecretOnError(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.stdin = strings.NewReader("s3cr3t-value-xyz")
	// No locations: the executor refuses the credential, naming the field.
	r := h.run("create", "s1", "--credential", "id=a,name=A,secret-stdin,hosts=h.example")
	require.Equal(t, ExitFailure, r.code)
	require.Contains(t, r.stderr, "executor create: the executor refused the request: ")
	require.NotContains(t, r.stderr+r.stdout, "s3cr3t-value-xyz")
}
