package session

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/egress"
	"github.com/sandgate/sandgate/core/gatewire"
	"github.com/sandgate/sandgate/core/sandbox"
)

const secret = "ghp_0123456789abcdefSECRET"

var sid = domain.MustParseSessionID("ses_test")

var defaults = Defaults{
	Image: "debian:bookworm", GateImage: "sandgate/gate:dev",
	ControlplaneURL: "http://172.17.0.1:7070", OTelEndpoint: "otel:4317",
}

func cred(name string) Credential {
	return Credential{
		ID: "cred_" + strings.ToLower(name), Name: name, Secret: gatewire.NewSecret(secret),
		AllowedHosts: []string{"api.github.com"},
		Locations:    []gatewire.Location{gatewire.LocationHeaders},
	}
}

func limited(hosts ...string) domain.Networking {
	return domain.Networking{Type: domain.NetLimited, AllowedHosts: hosts}
}

func TestBuildSpec(t *testing.T) {
	t.Parallel()
	gate := &sandbox.GateSpec{Image: defaults.GateImage, ControlplaneURL: defaults.ControlplaneURL, OTelEndpoint: "otel:4317"}
	unrestricted := domain.Networking{Type: domain.NetUnrestricted}
	for _, tc := range []struct {
		name     string
		req      Request
		d        Defaults
		wantSpec sandbox.Spec
	}{
		{
			name:     "empty request takes the defaults, ungated",
			req:      Request{},
			d:        defaults,
			wantSpec: sandbox.Spec{SessionID: sid, Image: "debian:bookworm", Workdir: sandbox.DefaultWorkdir, Networking: unrestricted, Isolation: sandbox.IsolationRunc},
		},
		{
			name: "caller's image, workdir and env",
			req:  Request{Image: "alpine:3", Workdir: "/src", Env: map[string]string{"FOO": "bar"}},
			d:    defaults,
			wantSpec: sandbox.Spec{SessionID: sid, Image: "alpine:3", Workdir: "/src", Networking: unrestricted,
				Env: map[string]string{"FOO": "bar"}, Isolation: sandbox.IsolationRunc},
		},
		{
			name: "limited is gated",
			req:  Request{Networking: limited("example.com")},
			d:    defaults,
			wantSpec: sandbox.Spec{SessionID: sid, Image: "debian:bookworm", Workdir: sandbox.DefaultWorkdir,
				Networking: limited("example.com"), Gate: gate, Isolation: sandbox.IsolationRunc},
		},
		{
			name: "credentials gate an unrestricted session and become placeholders",
			req:  Request{Env: map[string]string{"A": "1"}, Credentials: []Credential{cred("GITHUB_TOKEN")}},
			d:    defaults,
			wantSpec: sandbox.Spec{SessionID: sid, Image: "debian:bookworm", Workdir: sandbox.DefaultWorkdir,
				Networking: unrestricted, Gate: gate,
				Env: map[string]string{"A": "1", "GITHUB_TOKEN": egress.Placeholder(sid, "GITHUB_TOKEN")}, Isolation: sandbox.IsolationRunc},
		},
		{
			name: "limited without a gate image runs ungated",
			req:  Request{Networking: limited("example.com")},
			d:    Defaults{Image: "debian:bookworm"},
			wantSpec: sandbox.Spec{SessionID: sid, Image: "debian:bookworm", Workdir: sandbox.DefaultWorkdir,
				Networking: limited("example.com"), Isolation: sandbox.IsolationRunc},
		},
		{
			name: "hardening comes from the defaults",
			req:  Request{},
			d:    Defaults{Image: "debian:bookworm", Hardening: sandbox.Hardening{PidsLimit: 512, ReadOnlyRootfs: true}},
			wantSpec: sandbox.Spec{SessionID: sid, Image: "debian:bookworm", Workdir: sandbox.DefaultWorkdir,
				Networking: unrestricted, Hardening: sandbox.Hardening{PidsLimit: 512, ReadOnlyRootfs: true}, Isolation: sandbox.IsolationRunc},
		},
		{
			name: "isolation from the defaults",
			req:  Request{},
			d:    Defaults{Image: "debian:bookworm", Isolation: sandbox.IsolationGVisor},
			wantSpec: sandbox.Spec{SessionID: sid, Image: "debian:bookworm", Workdir: sandbox.DefaultWorkdir,
				Networking: unrestricted, Isolation: sandbox.IsolationGVisor},
		},
		{
			name: "the request's isolation wins",
			req:  Request{Isolation: sandbox.IsolationRunc},
			d:    Defaults{Image: "debian:bookworm", Isolation: sandbox.IsolationGVisor},
			wantSpec: sandbox.Spec{SessionID: sid, Image: "debian:bookworm", Workdir: sandbox.DefaultWorkdir,
				Networking: unrestricted, Isolation: sandbox.IsolationRunc},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			spec, rec, err := BuildSpec(sid, tc.req, tc.d)
			require.NoError(t, err)
			require.Equal(t, tc.wantSpec, spec)
			require.Equal(t, sid, rec.ID)
			require.Equal(t, tc.wantSpec.Networking, rec.Networking)
			require.Equal(t, tc.wantSpec.Isolation, rec.Isolation)
			require.Len(t, rec.Credentials, len(tc.req.Credentials))
			for _, v := range spec.Env {
				require.NotContains(t, v, secret, "a secret reached the sandbox's env")
			}
		})
	}
}

func TestBuildSpecRecord(t *testing.T) {
	t.Parallel()
	req := Request{Networking: limited("example.com"), Credentials: []Credential{cred("GITHUB_TOKEN")}}
	_, rec, err := BuildSpec(sid, req, defaults)
	require.NoError(t, err)
	require.Equal(t, Session{
		ID: sid, Networking: limited("example.com"),
		Credentials: []Credential{{
			ID: "cred_github_token", Name: "GITHUB_TOKEN", Secret: gatewire.NewSecret(secret),
			AllowedHosts: []string{"api.github.com"}, Locations: []gatewire.Location{gatewire.LocationHeaders},
		}},
		Image: "debian:bookworm", Workdir: sandbox.DefaultWorkdir, Isolation: sandbox.IsolationRunc,
	}, rec, "the record carries the resolved image, workdir and isolation")
	// The record does not alias the request.
	req.Credentials[0].AllowedHosts[0] = "evil.example"
	req.Networking.AllowedHosts[0] = "evil.example"
	require.Equal(t, "api.github.com", rec.Credentials[0].AllowedHosts[0])
	require.Equal(t, "example.com", rec.Networking.AllowedHosts[0])
}

func TestBuildSpecRefuses(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", MaxEnvBytes)
	many := map[string]string{}
	for i := range MaxEnv + 1 {
		many["V"+strconv.Itoa(i)] = ""
	}
	for _, tc := range []struct {
		name    string
		id      domain.ID
		req     Request
		d       Defaults
		wantErr error
		want    string
	}{
		{"no image anywhere", sid, Request{}, Defaults{}, ErrInvalidRequest, "image: must not be empty"},
		{"image with whitespace", sid, Request{Image: "a b"}, defaults, ErrInvalidRequest, "image \"a b\""},
		{"relative workdir", sid, Request{Workdir: "src"}, defaults, ErrInvalidRequest, "workdir \"src\""},
		{"unknown isolation", sid, Request{Isolation: "kata"}, defaults, ErrInvalidRequest, `isolation "kata"`},
		{"bad network type", sid, Request{Networking: domain.Networking{Type: "open"}}, defaults, ErrInvalidRequest, "open"},
		{"bad allowed host", sid, Request{Networking: limited("https://x.com/")}, defaults, ErrInvalidRequest, "x.com"},
		{"bad env name", sid, Request{Env: map[string]string{"1X": ""}}, defaults, ErrInvalidRequest, `env: invalid variable name "1X"`},
		{"reserved env", sid, Request{Env: map[string]string{"LD_PRELOAD": "/x.so"}}, defaults, ErrInvalidRequest, `env: "LD_PRELOAD" is reserved`},
		{"proxy env", sid, Request{Env: map[string]string{"https_proxy": "x"}}, defaults, ErrInvalidRequest, `env: "https_proxy" is reserved`},
		{"NUL in env value", sid, Request{Env: map[string]string{"A": "a\x00b"}}, defaults, ErrInvalidRequest, `env: value of "A" holds a NUL`},
		{"too many env", sid, Request{Env: many}, defaults, ErrInvalidRequest, "env: 1025 variables"},
		{"env too large", sid, Request{Env: map[string]string{"A": long}}, defaults, ErrInvalidRequest, "env: 1048577 bytes"},
		{"gate variable in a gated session", sid, Request{Networking: limited("a.com"), Env: map[string]string{"SSL_CERT_FILE": "/x"}}, defaults, ErrInvalidRequest, `env: "SSL_CERT_FILE" is set by the egress gate`},
		{"credential name collides with env", sid, Request{Env: map[string]string{"TOKEN": "x"}, Credentials: []Credential{cred("TOKEN")}}, defaults, ErrInvalidRequest, `credentials[0].name "TOKEN": collides with env`},
		{"credential name not an env name", sid, Request{Credentials: []Credential{cred("my-token")}}, defaults, ErrInvalidRequest, `credentials[0].name "my-token": must be an environment variable name`},
		{"credential name reserved", sid, Request{Credentials: []Credential{cred("PATH")}}, defaults, ErrInvalidRequest, `credentials[0].name "PATH": is reserved`},
		{"credential name a gate variable", sid, Request{Credentials: []Credential{cred("CURL_CA_BUNDLE")}}, defaults, ErrInvalidRequest, `credentials[0].name "CURL_CA_BUNDLE": is reserved`},
		{"duplicate credential names", sid, Request{Credentials: []Credential{cred("A"), func() Credential { c := cred("A"); c.ID = "other"; return c }()}}, defaults, ErrInvalidRequest, `credentials[1].name "A": duplicate`},
		{"credential without hosts", sid, Request{Credentials: []Credential{func() Credential { c := cred("A"); c.AllowedHosts = nil; return c }()}}, defaults, ErrInvalidRequest, "credentials[0].allowed_hosts"},
		{"short secret", sid, Request{Credentials: []Credential{func() Credential { c := cred("A"); c.Secret = gatewire.NewSecret("x"); return c }()}}, defaults, ErrInvalidRequest, "credentials[0].secret"},
		{"credentials without a gate image", sid, Request{Networking: limited("a.com"), Credentials: []Credential{cred("A")}}, Defaults{Image: "debian:bookworm"}, ErrGateUnavailable, "credentials: a session with credentials needs an egress gate"},
		{"unrestricted credentials without a gate image", sid, Request{Credentials: []Credential{cred("A")}}, Defaults{Image: "debian:bookworm"}, ErrGateUnavailable, "needs an egress gate"},
		{"gate without a control plane URL", sid, Request{Networking: limited("a.com")}, Defaults{Image: "i", GateImage: "g"}, ErrInvalidRequest, "gate.controlplane_url"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := BuildSpec(tc.id, tc.req, tc.d)
			require.ErrorIs(t, err, tc.wantErr)
			require.ErrorContains(t, err, tc.want)
			require.NotContains(t, err.Error(), secret)
			require.ErrorIs(t, err, ErrInvalidRequest)
		})
	}
}
