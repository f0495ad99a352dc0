package config

import (
	"encoding/base64"
	"encoding/hex"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func env(kv map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := kv[k]; return v, ok }
}

const token = "0123456789abcdef-token"

var key32 = strings.Repeat("k", 32)

func TestLoadDefaults(t *testing.T) {
	t.Parallel()
	c, err := Load(nil, env(nil), io.Discard)
	require.NoError(t, err)
	require.Equal(t, DefaultListen, c.Listen)
	require.Equal(t, BackendDocker, c.Backend)
	require.Equal(t, DefaultDatabaseURL, c.DatabaseURL)
	require.Equal(t, DefaultKeyFile, c.KeyFile)
	require.Nil(t, c.SecretKey)
	require.Equal(t, DefaultImage, c.Image)
	require.Empty(t, c.GateImage, "no control-plane URL: no gates")
	require.True(t, c.GatesDisabled)
	require.Equal(t, DefaultGateNetwork, c.GateNetwork)
	require.Equal(t, DefaultShutdownTimeout, c.ShutdownTimeout)
	require.Equal(t, int64(512), c.Hardening.PidsLimit)
	require.Empty(t, c.GateOTelEndpoint, "gates export nothing unless told")
	require.False(t, c.GateOTelInsecure)
	require.Equal(t, DefaultCheckpointDir, c.CheckpointDir)
	require.Equal(t, int64(DefaultCheckpointMaxBytes), c.CheckpointMaxBytes)
	require.Equal(t, DefaultIdleTTL, c.IdleTTL)
	require.Equal(t, DefaultReapInterval, c.ReapInterval)
	require.Equal(t, DefaultOrphanGrace, c.OrphanGrace)
	require.Equal(t, DefaultCheckpointRetention, c.CheckpointRetention)
	require.Equal(t, DefaultReadHeaderTimeout, c.ReadHeaderTimeout)
	require.Equal(t, DefaultBodyIdleTimeout, c.BodyIdleTimeout)
	require.Equal(t, DefaultMaxBodies, c.MaxBodies)
	require.Equal(t, int64(DefaultBatchMemory), c.BatchMemory)
}

func TestLoadEdge(t *testing.T) {
	t.Parallel()
	c, err := Load([]string{"-max-bodies", "3"}, env(map[string]string{
		"SANDGATE_READ_HEADER_TIMEOUT": "2s", "SANDGATE_BODY_IDLE_TIMEOUT": "1m",
		"SANDGATE_MAX_BODIES": "9", "SANDGATE_BATCH_MEMORY_BYTES": "134217728",
	}), io.Discard)
	require.NoError(t, err)
	require.Equal(t, 2*time.Second, c.ReadHeaderTimeout)
	require.Equal(t, time.Minute, c.BodyIdleTimeout)
	require.Equal(t, 3, c.MaxBodies, "the flag wins")
	require.Equal(t, int64(128<<20), c.BatchMemory)
}

func TestLoadGateOTel(t *testing.T) {
	t.Parallel()
	c, err := Load([]string{"--gate-otel-insecure=true"}, env(map[string]string{
		"SANDGATE_GATE_OTEL_ENDPOINT": "http://otel-collector:4317"}), io.Discard)
	require.NoError(t, err)
	require.Equal(t, "http://otel-collector:4317", c.GateOTelEndpoint)
	require.True(t, c.GateOTelInsecure)
	c, err = Load(nil, env(map[string]string{"SANDGATE_GATE_OTEL_ENDPOINT": "http://127.0.0.1:4317",
		"SANDGATE_GATE_NETWORK": "host"}), io.Discard)
	require.NoError(t, err, "loopback is the host's own when gates share its network")
	require.Equal(t, "http://127.0.0.1:4317", c.GateOTelEndpoint)
}

func TestLoadPrecedence(t *testing.T) {
	t.Parallel()
	e := env(map[string]string{
		"SANDGATE_LISTEN": "127.0.0.1:8080", "SANDGATE_IMAGE": "env-image",
		"SANDGATE_CONTROLPLANE_URL": "http://172.17.0.1:7071", "SANDGATE_GATE_LISTEN": "172.17.0.1:7071",
		"SANDGATE_SECRET_KEY": hex.EncodeToString([]byte(key32)), "SANDGATE_SHUTDOWN_TIMEOUT": "3s",
	})
	c, err := Load([]string{"--image", "flag-image"}, e, io.Discard)
	require.NoError(t, err)
	require.Empty(t, c.APIToken)
	c, err = Load([]string{"--image", "flag-image"}, func(k string) (string, bool) {
		if k == "SANDGATE_API_TOKEN" {
			return token, true
		}
		return e(k)
	}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, token, c.APIToken, "a secret comes from the environment")
	c, err = Load([]string{"--image", "flag-image", "--api-token", token + "-flag"}, e, io.Discard)
	require.NoError(t, err)
	require.Equal(t, token+"-flag", c.APIToken, "and the flag wins over it")
	c, err = Load([]string{"--image", "flag-image"}, e, io.Discard)
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:8080", c.Listen, "environment over default")
	require.Equal(t, "flag-image", c.Image, "flag over environment")
	require.Equal(t, DefaultGateImage, c.GateImage)
	require.False(t, c.GatesDisabled)
	require.Equal(t, "172.17.0.1:7071", c.GateListen)
	require.Equal(t, []byte(key32), c.SecretKey)
	require.Equal(t, 3*time.Second, c.ShutdownTimeout)
}

func TestLoadValid(t *testing.T) {
	t.Parallel()
	b64 := base64.StdEncoding.EncodeToString([]byte(key32))
	for name, kv := range map[string]map[string]string{
		"beyond loopback with token":   {"SANDGATE_LISTEN": "0.0.0.0:7070", "SANDGATE_API_TOKEN": token},
		"localhost":                    {"SANDGATE_LISTEN": "localhost:7070"},
		"ipv6 loopback":                {"SANDGATE_LISTEN": "[::1]:0"},
		"postgres":                     {"SANDGATE_DATABASE_URL": "postgres://u:pw@db/x"},
		"key base64":                   {"SANDGATE_SECRET_KEY": b64},
		"key base64 raw url":           {"SANDGATE_SECRET_KEY": base64.RawURLEncoding.EncodeToString([]byte(key32))},
		"gates off explicitly":         {"SANDGATE_GATE_IMAGE": "", "SANDGATE_CONTROLPLANE_URL": "http://10.0.0.1"},
		"loopback url, host network":   {"SANDGATE_CONTROLPLANE_URL": "http://127.0.0.1:7070", "SANDGATE_GATE_NETWORK": "host"},
		"no idle reaping, slow rounds": {"SANDGATE_IDLE_TTL": "0", "SANDGATE_REAP_INTERVAL": "1h"},
		"short ttl":                    {"SANDGATE_IDLE_TTL": "2s", "SANDGATE_REAP_INTERVAL": "500ms", "SANDGATE_ORPHAN_GRACE": "0s"},
		"checkpoints kept":             {"SANDGATE_CHECKPOINT_RETENTION": "0"},
		"short retention":              {"SANDGATE_CHECKPOINT_RETENTION": "90s"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := Load(nil, env(kv), io.Discard)
			require.NoError(t, err)
		})
	}
}

func TestLoadInvalid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		kv   map[string]string
		args []string
		want string
	}{
		{"listen garbage", map[string]string{"SANDGATE_LISTEN": "nope"}, nil, "SANDGATE_LISTEN: must be host:port"},
		{"listen empty", map[string]string{"SANDGATE_LISTEN": ""}, nil, "SANDGATE_LISTEN: must be host:port"},
		{"listen port", nil, []string{"--listen", "127.0.0.1:99999"}, "SANDGATE_LISTEN: port must be a number"},
		{"gate listen", map[string]string{"SANDGATE_GATE_LISTEN": "x"}, nil, "SANDGATE_GATE_LISTEN: must be host:port"},
		{"open beyond loopback", map[string]string{"SANDGATE_LISTEN": "0.0.0.0:7070"}, nil, "SANDGATE_API_TOKEN: required when SANDGATE_LISTEN is not a loopback"},
		{"all interfaces", map[string]string{"SANDGATE_LISTEN": ":7070"}, nil, "SANDGATE_API_TOKEN: required"},
		{"a name", map[string]string{"SANDGATE_LISTEN": "example.internal:7070"}, nil, "SANDGATE_API_TOKEN: required"},
		{"short token", map[string]string{"SANDGATE_API_TOKEN": "short-secret"}, nil, "SANDGATE_API_TOKEN: must be at least 16"},
		{"token with space", map[string]string{"SANDGATE_API_TOKEN": "a-long-token with-space"}, nil, "SANDGATE_API_TOKEN: must not contain"},
		{"k8s namespace", map[string]string{"SANDGATE_BACKEND": "kubernetes", "SANDGATE_K8S_NAMESPACE": " "}, nil, "SANDGATE_K8S_NAMESPACE: must name"},
		{"netsetup image", nil, []string{"--backend=kubernetes", "--k8s-netsetup-image="}, "SANDGATE_K8S_NETSETUP_IMAGE: must name"},
		{"backend", nil, []string{"--backend=podman"}, "SANDGATE_BACKEND: must be docker"},
		{"database scheme", map[string]string{"SANDGATE_DATABASE_URL": "mysql://u:hunter2@x"}, nil, "SANDGATE_DATABASE_URL: must start with"},
		{"sqlite path", map[string]string{"SANDGATE_DATABASE_URL": "sqlite://"}, nil, "SANDGATE_DATABASE_URL: sqlite:// needs a path"},
		{"key short", map[string]string{"SANDGATE_SECRET_KEY": "c2hvcnQ="}, nil, "SANDGATE_SECRET_KEY: must be 32 bytes"},
		{"key file", map[string]string{"SANDGATE_SECRET_KEY_FILE": ""}, nil, "SANDGATE_SECRET_KEY_FILE: required"},
		{"image", map[string]string{"SANDGATE_IMAGE": " "}, nil, "SANDGATE_IMAGE: must name an image"},
		{"network", map[string]string{"SANDGATE_GATE_NETWORK": ""}, nil, "SANDGATE_GATE_NETWORK: must name"},
		{"controlplane scheme", map[string]string{"SANDGATE_CONTROLPLANE_URL": "ftp://10.0.0.1"}, nil, "SANDGATE_CONTROLPLANE_URL: must be http(s)"},
		{"controlplane path", map[string]string{"SANDGATE_CONTROLPLANE_URL": "http://10.0.0.1/x"}, nil, "SANDGATE_CONTROLPLANE_URL: must be http(s)"},
		{"controlplane user", map[string]string{"SANDGATE_CONTROLPLANE_URL": "http://u:p@10.0.0.1"}, nil, "SANDGATE_CONTROLPLANE_URL: must be http(s)"},
		{"controlplane loopback", map[string]string{"SANDGATE_CONTROLPLANE_URL": "http://127.0.0.1:7070"}, nil, `SANDGATE_CONTROLPLANE_URL: a loopback host is unreachable from gates on network "bridge"`},
		{"controlplane localhost", map[string]string{"SANDGATE_CONTROLPLANE_URL": "http://localhost:7070"}, nil, "SANDGATE_CONTROLPLANE_URL: a loopback host"},
		{"gate otel scheme", map[string]string{"SANDGATE_GATE_OTEL_ENDPOINT": "grpc://10.0.0.9:4317"}, nil, "SANDGATE_GATE_OTEL_ENDPOINT: must be http(s)"},
		{"gate otel path", map[string]string{"SANDGATE_GATE_OTEL_ENDPOINT": "http://10.0.0.9:4317/v1"}, nil, "SANDGATE_GATE_OTEL_ENDPOINT: must be http(s)"},
		{"gate otel loopback", map[string]string{"SANDGATE_GATE_OTEL_ENDPOINT": "http://127.0.0.1:4317"}, nil, "SANDGATE_GATE_OTEL_ENDPOINT: a loopback host"},
		{"gate otel insecure", map[string]string{"SANDGATE_GATE_OTEL_INSECURE": "maybe"}, nil, "SANDGATE_GATE_OTEL_INSECURE: must be true or false"},
		{"shutdown", map[string]string{"SANDGATE_SHUTDOWN_TIMEOUT": "-1s"}, nil, "SANDGATE_SHUTDOWN_TIMEOUT: must be a positive"},
		{"hardening", map[string]string{"SANDBOX_PIDS_LIMIT": "lots"}, nil, "SANDBOX_PIDS_LIMIT"},
		{"checkpoint dir", map[string]string{"SANDGATE_CHECKPOINT_DIR": " "}, nil, "SANDGATE_CHECKPOINT_DIR: must name"},
		{"checkpoint max", map[string]string{"SANDGATE_CHECKPOINT_MAX_BYTES": "1G"}, nil, "SANDGATE_CHECKPOINT_MAX_BYTES: must be a positive"},
		{"checkpoint max zero", nil, []string{"--checkpoint-max-bytes", "0"}, "SANDGATE_CHECKPOINT_MAX_BYTES: must be a positive"},
		{"idle ttl", map[string]string{"SANDGATE_IDLE_TTL": "-1m"}, nil, "SANDGATE_IDLE_TTL: must be a duration"},
		{"reap interval", map[string]string{"SANDGATE_REAP_INTERVAL": "0s"}, nil, "SANDGATE_REAP_INTERVAL: must be a positive"},
		{"reap interval vs ttl", map[string]string{"SANDGATE_IDLE_TTL": "1m", "SANDGATE_REAP_INTERVAL": "31s"}, nil, "SANDGATE_REAP_INTERVAL: 31s is more than half of SANDGATE_IDLE_TTL (1m0s)"},
		{"orphan grace", map[string]string{"SANDGATE_ORPHAN_GRACE": "soon"}, nil, "SANDGATE_ORPHAN_GRACE: must be a duration"},
		{"header timeout", map[string]string{"SANDGATE_READ_HEADER_TIMEOUT": "0s"}, nil, "SANDGATE_READ_HEADER_TIMEOUT: must be a positive duration"},
		{"body idle timeout", map[string]string{"SANDGATE_BODY_IDLE_TIMEOUT": "-1s"}, nil, "SANDGATE_BODY_IDLE_TIMEOUT: must be a positive duration"},
		{"max bodies", map[string]string{"SANDGATE_MAX_BODIES": "0"}, nil, "SANDGATE_MAX_BODIES: must be a positive number"},
		{"batch memory", map[string]string{"SANDGATE_BATCH_MEMORY_BYTES": "1024"}, nil, "SANDGATE_BATCH_MEMORY_BYTES: must be a number of bytes of at least"},
		{"checkpoint retention", map[string]string{"SANDGATE_CHECKPOINT_RETENTION": "-1h"}, nil, "SANDGATE_CHECKPOINT_RETENTION: must be a duration"},
		{"checkpoint retention unit", nil, []string{"--checkpoint-retention", "7d"}, "SANDGATE_CHECKPOINT_RETENTION: must be a duration"},
		{"argument", nil, []string{"extra"}, `unexpected argument "extra"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Load(tt.args, env(tt.kv), io.Discard)
			require.ErrorIs(t, err, ErrInvalid)
			require.ErrorContains(t, err, tt.want)
			for _, secret := range []string{"hunter2", "short-secret", "c2hvcnQ=", "with-space"} {
				require.NotContains(t, err.Error(), secret)
			}
		})
	}
}

func TestLoadKubernetes(t *testing.T) {
	t.Parallel()
	env := map[string]string{"SANDGATE_BACKEND": "kubernetes", "SANDGATE_KUBECONFIG": "/etc/kube/config"}
	c, err := Load([]string{"--k8s-namespace=sandboxes"}, func(k string) (string, bool) { v, ok := env[k]; return v, ok }, io.Discard)
	require.NoError(t, err)
	require.Equal(t, BackendKubernetes, c.Backend)
	require.Equal(t, "/etc/kube/config", c.Kubeconfig)
	require.Equal(t, "sandboxes", c.K8sNamespace)
	require.Equal(t, DefaultNetsetupImage, c.NetsetupImage)
	require.Empty(t, c.GateImage, "no control plane: no gates")

	env["SANDGATE_CONTROLPLANE_URL"] = "http://sandgate.sandgate.svc:7071"
	c, err = Load(nil, func(k string) (string, bool) { v, ok := env[k]; return v, ok }, io.Discard)
	require.NoError(t, err, "gates run on kubernetes as native sidecars")
	require.Equal(t, "http://sandgate.sandgate.svc:7071", c.ControlplaneURL)
	require.NotEmpty(t, c.GateImage)
}

func TestLoadHelp(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	b64 := base64.StdEncoding.EncodeToString([]byte(key32))
	_, err := Load([]string{"-h"}, env(map[string]string{"SANDGATE_API_TOKEN": token, "SANDGATE_SECRET_KEY": b64}), &out)
	require.ErrorIs(t, err, flag.ErrHelp)
	require.Contains(t, out.String(), "SANDGATE_CONTROLPLANE_URL")
	require.NotContains(t, out.String(), token, "-h never prints a secret from the environment")
	require.NotContains(t, out.String(), b64)
}

func TestLoadOrCreateKey(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sub", "secret.key")
	c := Config{KeyFile: path}
	first, err := c.LoadOrCreateKey()
	require.NoError(t, err)
	require.Len(t, first, KeyLen)
	info, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	again, err := c.LoadOrCreateKey()
	require.NoError(t, err)
	require.Equal(t, first, again, "the stored key is reused")

	require.NoError(t, os.Chmod(path, 0o644))
	_, err = c.LoadOrCreateKey()
	require.ErrorContains(t, err, "SANDGATE_SECRET_KEY_FILE: "+path+" is readable by others")

	given := Config{SecretKey: []byte(key32), KeyFile: path}
	k, err := given.LoadOrCreateKey()
	require.NoError(t, err)
	require.Equal(t, []byte(key32), k)
}

func TestLoadOrCreateKeyBadFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "secret.key")
	require.NoError(t, os.WriteFile(path, []byte("not a key\n"), 0o600))
	_, err := Config{KeyFile: path}.LoadOrCreateKey()
	require.ErrorContains(t, err, "SANDGATE_SECRET_KEY_FILE: must be 32 bytes")
	require.NotErrorIs(t, err, os.ErrNotExist)
}

// TestAgentImageAuto: auto (the default) is the agent image on Docker and
// none on Kubernetes; an explicit value wins on both, and empty means none.
func TestAgentImageAuto(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{}, DefaultAgentImage},
		{map[string]string{"SANDGATE_BACKEND": BackendKubernetes}, ""},
		{map[string]string{"SANDGATE_BACKEND": BackendKubernetes, "SANDGATE_AGENT_IMAGE": "reg/agent:1"}, "reg/agent:1"},
		{map[string]string{"SANDGATE_AGENT_IMAGE": ""}, ""},
	} {
		c, err := Load(nil, env(tc.env), io.Discard)
		require.NoError(t, err, "%v", tc.env)
		require.Equal(t, tc.want, c.AgentImage, "%v", tc.env)
	}
}
