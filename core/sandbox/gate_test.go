package sandbox

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/domain"
)

func TestGateSandboxEnv(t *testing.T) {
	t.Parallel()
	env := GateSandboxEnv()
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"} {
		require.Equal(t, "http://127.0.0.1:15080", env[k], k)
	}
	for _, k := range []string{"NO_PROXY", "no_proxy"} {
		v, ok := env[k]
		require.True(t, ok, k)
		require.Empty(t, v, k)
	}
	require.Equal(t, "1", env["NODE_USE_ENV_PROXY"])
	for _, k := range []string{"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO"} {
		require.Equal(t, "/etc/sandgate/ca-bundle.pem", env[k], k)
	}
	require.Equal(t, "/etc/sandgate/ca.pem", env["NODE_EXTRA_CA_CERTS"])
	require.NoError(t, ValidateEnv(env), "every name is a valid env name")
}

func TestGateSpecEnv(t *testing.T) {
	t.Parallel()
	g := GateSpec{ControlplaneURL: "http://10.0.0.1:7070"}
	require.Equal(t, []string{
		"GATE_SESSION_ID=ses_a", "CONTROLPLANE_URL=http://10.0.0.1:7070", "GATE_TOKEN=sgt_x", "GATE_UID=64250", "GATE_GID=64250",
		"GATE_ADDR=127.0.0.1:15080", "GATE_CA_FILE=/run/sandgate/ca.pem",
	}, g.Env(domain.MustParseSessionID("ses_a"), "sgt_x").Environ())
	g.OTelEndpoint = "collector:4317"
	env := g.Env(domain.MustParseSessionID("ses_a"), "sgt_x").Environ()
	require.Contains(t, env, "OTEL_EXPORTER_OTLP_ENDPOINT=collector:4317")
	require.NotContains(t, strings.Join(env, " "), "INSECURE")
	g.OTelInsecure = true
	require.Contains(t, g.Env(domain.MustParseSessionID("ses_a"), "sgt_x").Environ(), "OTEL_EXPORTER_OTLP_INSECURE=true")
}

func TestCABundle(t *testing.T) {
	t.Parallel()
	ca := []byte("-----CA-----\n")
	require.Equal(t, "-----CA-----\n", string(CABundle(nil, ca)))
	require.Equal(t, "root\n-----CA-----\n", string(CABundle([]byte("root"), ca)), "a missing final newline is added")
	sys := []byte("root\n")
	require.Equal(t, "root\n-----CA-----\n", string(CABundle(sys, ca)))
	require.Equal(t, "root\n", string(sys), "the system bundle is not modified")
}

func TestCheckImageUser(t *testing.T) {
	t.Parallel()
	passwd := []byte("root:x:0:0:root:/root:/bin/bash\ngate:x:64250:64250::/:/bin/false\napp:x:1000:1000::/home/app:/bin/sh\nbroken:x:zz:0::/:\n")
	tests := []struct {
		user    string
		passwd  []byte
		refused bool
		isName  bool
	}{
		{user: ""},
		{user: "0"},
		{user: "1000:1000"},
		{user: "64250", refused: true},
		{user: "64250:0", refused: true},
		{user: "gate", passwd: passwd, refused: true, isName: true},
		{user: "gate:root", passwd: passwd, refused: true, isName: true},
		{user: "app", passwd: passwd, isName: true},
		{user: "gate", isName: true},                   // no passwd: the runtime refuses an unknown user
		{user: "broken", passwd: passwd, isName: true}, // malformed uid field
		{user: "nobody", passwd: passwd, isName: true},
	}
	for _, tt := range tests {
		err := CheckImageUser(tt.user, tt.passwd)
		if tt.refused {
			require.ErrorIs(t, err, ErrGateUIDImage, tt.user)
			require.Contains(t, err.Error(), tt.user)
		} else {
			require.NoError(t, err, tt.user)
		}
		require.Equal(t, tt.isName, ImageUserIsName(tt.user), tt.user)
	}
}
