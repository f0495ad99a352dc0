package gatewire

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/domain"
)

var (
	testToken = NewToken()
	testSID   = domain.NewID("ses")
)

// baseEnv is a minimal valid environment.
func baseEnv() map[string]string {
	return map[string]string{
		"CONTROLPLANE_URL": "http://executor:8080",
		"GATE_TOKEN":       testToken,
		"GATE_SESSION_ID":  testSID.String(),
	}
}

func getenv(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestParseEnvDefaults(t *testing.T) {
	t.Parallel()
	s, err := ParseEnv(getenv(baseEnv()))
	require.NoError(t, err)
	require.Equal(t, "http://executor:8080/internal/v1/gate/config", s.ConfigURL())
	require.Equal(t, testToken, s.Token)
	require.Equal(t, testSID, s.SessionID)
	require.Equal(t, "executor", s.ControlPlaneHost())
	require.Equal(t, "http://executor:8080/internal/v1/gate/report", s.ReportURL())
	require.Equal(t, uint32(64250), s.UID)
	require.Equal(t, uint32(64250), s.GID)
	require.Equal(t, netip.MustParseAddrPort("127.0.0.1:15080"), s.Addr)
	require.Equal(t, 30*time.Second, s.FetchInterval)
	require.Equal(t, "/run/sandgate/ca.pem", s.CAFile)
	require.False(t, s.FirewallPreinstalled)
}

func TestParseEnvValues(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, key, value string
		check            func(t *testing.T, s Env)
	}{
		{"https with a path prefix", "CONTROLPLANE_URL", "HTTPS://cp.example:8443/sandgate/", func(t *testing.T, s Env) {
			require.Equal(t, "https://cp.example:8443/sandgate/internal/v1/gate/config", s.ConfigURL())
		}},
		{"IPv6 control plane", "CONTROLPLANE_URL", "http://[fd00::1]:8080", func(t *testing.T, s Env) {
			require.Equal(t, "http://[fd00::1]:8080/internal/v1/gate/config", s.ConfigURL())
		}},
		{"uid", "GATE_UID", "1000", func(t *testing.T, s Env) { require.Equal(t, uint32(1000), s.UID) }},
		{"largest gid", "GATE_GID", "2147483647", func(t *testing.T, s Env) { require.Equal(t, uint32(1<<31-1), s.GID) }},
		{"IPv6 loopback", "GATE_ADDR", "[::1]:15081", func(t *testing.T, s Env) {
			require.Equal(t, netip.MustParseAddrPort("[::1]:15081"), s.Addr)
		}},
		{"other IPv4 loopback", "GATE_ADDR", "127.0.0.2:9", func(t *testing.T, s Env) {
			require.Equal(t, netip.MustParseAddrPort("127.0.0.2:9"), s.Addr)
		}},
		{"mapped loopback is unmapped", "GATE_ADDR", "[::ffff:127.0.0.1]:15080", func(t *testing.T, s Env) {
			require.Equal(t, netip.MustParseAddrPort("127.0.0.1:15080"), s.Addr)
		}},
		{"interval", "GATE_FETCH_INTERVAL", "1m30s", func(t *testing.T, s Env) { require.Equal(t, 90*time.Second, s.FetchInterval) }},
		{"shortest interval", "GATE_FETCH_INTERVAL", "1s", func(t *testing.T, s Env) { require.Equal(t, time.Second, s.FetchInterval) }},
		{"tunnel idle", "GATE_TUNNEL_IDLE_TIMEOUT", "90s", func(t *testing.T, s Env) { require.Equal(t, 90*time.Second, s.TunnelIdle) }},
		{"CA file", "GATE_CA_FILE", "/etc/sandgate/ca.crt", func(t *testing.T, s Env) { require.Equal(t, "/etc/sandgate/ca.crt", s.CAFile) }},
		{"firewall by an init step", "GATE_FIREWALL", "preinstalled", func(t *testing.T, s Env) { require.True(t, s.FirewallPreinstalled) }},
		{"firewall by the gate", "GATE_FIREWALL", "self", func(t *testing.T, s Env) { require.False(t, s.FirewallPreinstalled) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := baseEnv()
			env[tc.key] = tc.value
			s, err := ParseEnv(getenv(env))
			require.NoError(t, err)
			tc.check(t, s)
		})
	}
}

func TestParseEnvRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		key, value string
	}{
		{"CONTROLPLANE_URL", ""},
		{"CONTROLPLANE_URL", "executor:8080"},
		{"CONTROLPLANE_URL", "ftp://executor"},
		{"CONTROLPLANE_URL", "http://"},
		{"CONTROLPLANE_URL", "http://:8080"},
		{"CONTROLPLANE_URL", "http://user:pw@executor"},
		{"CONTROLPLANE_URL", "http://executor/?x=1"},
		{"CONTROLPLANE_URL", "http://executor/#f"},
		{"CONTROLPLANE_URL", "http://exe cutor/"},
		{"GATE_TOKEN", ""},
		{"GATE_TOKEN", strings.ToUpper(testToken)},
		{"GATE_TOKEN", testToken[:len(testToken)-1]},
		{"GATE_TOKEN", " " + testToken},
		{"GATE_SESSION_ID", ""},
		{"GATE_SESSION_ID", "not a session"},
		{"GATE_UID", "0"},
		{"GATE_UID", "-1"},
		{"GATE_UID", "+5"},
		{"GATE_UID", "2147483648"},
		{"GATE_UID", "4294967296"},
		{"GATE_UID", "0x10"},
		{"GATE_UID", "010"},
		{"GATE_UID", " 5"},
		{"GATE_GID", "0"},
		{"GATE_GID", "abc"},
		{"GATE_ADDR", "0.0.0.0:15080"},
		{"GATE_ADDR", "[::]:15080"},
		{"GATE_ADDR", "10.0.0.1:15080"},
		{"GATE_ADDR", "localhost:15080"},
		{"GATE_ADDR", "127.0.0.1"},
		{"GATE_ADDR", "127.0.0.1:0"},
		{"GATE_ADDR", ":15080"},
		{"GATE_ADDR", "[fe80::1%lo]:15080"},
		{"GATE_FETCH_INTERVAL", "30"},
		{"GATE_TUNNEL_IDLE_TIMEOUT", "0"},
		{"GATE_TUNNEL_IDLE_TIMEOUT", "500ms"},
		{"GATE_FETCH_INTERVAL", "999ms"},
		{"GATE_FETCH_INTERVAL", "-5s"},
		{"GATE_CA_FILE", "ca.pem"},
		{"GATE_CA_FILE", "/run/../ca.pem"},
		{"GATE_CA_FILE", "/"},
		{"GATE_CA_FILE", "/run/sandgate/"},
		{"GATE_FIREWALL", "PREINSTALLED"},
		{"GATE_FIREWALL", "none"},
	} {
		t.Run(tc.key+"="+tc.value, func(t *testing.T) {
			t.Parallel()
			env := baseEnv()
			env[tc.key] = tc.value
			_, err := ParseEnv(getenv(env))
			require.Error(t, err)
			require.True(t, strings.HasPrefix(err.Error(), tc.key+": "), "error %q names %s", err, tc.key)
			require.NotContains(t, err.Error(), testToken[4:20])
		})
	}
}

func TestParseEnvReportsEveryVariable(t *testing.T) {
	t.Parallel()
	_, err := ParseEnv(getenv(map[string]string{"GATE_UID": "0", "GATE_ADDR": "0.0.0.0:1"}))
	require.Error(t, err)
	for _, k := range []string{"CONTROLPLANE_URL", "GATE_TOKEN", "GATE_SESSION_ID", "GATE_UID", "GATE_ADDR"} {
		require.Contains(t, err.Error(), k+": ")
	}
	require.NotContains(t, err.Error(), "GATE_GID")
}

// TestEnvironRoundTrip: what a provider writes (NewEnv, Environ) is what
// the gate reads back (ParseEnv), and the lines are the ones gates have
// always been started with.
func TestEnvironRoundTrip(t *testing.T) {
	t.Parallel()
	e := NewEnv(testSID, "http://executor:8080", testToken)
	require.Equal(t, []string{
		"GATE_SESSION_ID=" + testSID.String(),
		"CONTROLPLANE_URL=http://executor:8080",
		"GATE_TOKEN=" + testToken,
		"GATE_UID=64250",
		"GATE_GID=64250",
		"GATE_ADDR=127.0.0.1:15080",
		"GATE_CA_FILE=/run/sandgate/ca.pem",
	}, e.Environ())
	for _, full := range []Env{e, func() Env {
		f := e
		f.UID, f.GID = 1000, 1001
		f.FetchInterval = 90 * time.Second
		f.TunnelIdle = 5 * time.Minute
		f.FirewallPreinstalled = true
		f.OTelEndpoint, f.OTelInsecure = "http://collector:4317", true
		return f
	}()} {
		m := map[string]string{}
		for _, kv := range full.Environ() {
			k, v, ok := strings.Cut(kv, "=")
			require.True(t, ok)
			m[k] = v
		}
		got, err := ParseEnv(getenv(m))
		require.NoError(t, err)
		if full.FetchInterval == 0 {
			full.FetchInterval = DefaultFetchInterval
		}
		require.Equal(t, full, got)
	}
	require.Empty(t, Env{ControlPlane: "http://a b/"}.ConfigURL())
	require.Empty(t, Env{ControlPlane: "http://a b/"}.ControlPlaneHost())
}

func TestParseOneShot(t *testing.T) {
	t.Parallel()
	uid, err := ParseID("")
	require.NoError(t, err)
	require.Equal(t, uint32(UID), uid)
	ca, err := ParseCAFile("")
	require.NoError(t, err)
	require.Equal(t, CAFile, ca)
	_, err = ParseAddr(strings.Repeat("9", 70))
	require.ErrorContains(t, err, "…")
}
