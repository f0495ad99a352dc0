package main

import (
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/sandgate/sandgate/cmd/executor/internal/config"
)

// composeFile is the subset of a compose file the test checks.
type composeFile struct {
	Services map[string]struct {
		Build *struct {
			Context string `yaml:"context"`
			Target  string `yaml:"target"`
		} `yaml:"build"`
		Image       string            `yaml:"image"`
		Environment map[string]string `yaml:"environment"`
		Networks    []string          `yaml:"networks"`
		Volumes     []string          `yaml:"volumes"`
	} `yaml:"services"`
	Networks map[string]struct {
		Name string `yaml:"name"`
	} `yaml:"networks"`
	Volumes map[string]any `yaml:"volumes"`
}

// interpolation is compose's ${VAR}, ${VAR:-default} and ${VAR:?error}.
var interpolation = regexp.MustCompile(`\$\{([A-Z_]+)(?::([-?])([^}]*))?\}`)

// TestComposeFile checks deploy/compose statically (no engine here can pull
// its images): the executor's SANDGATE_* variables are settings and, with
// the variables the file requires set, a valid configuration; the build
// targets exist in the Dockerfile; the gate image the executor starts is
// the one the file builds; gates, the control-plane URL and the collector
// meet on the gates network; the collector's config file exists.
func TestComposeFile(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	dir := filepath.Join(root, "deploy", "compose")
	data, err := os.ReadFile(filepath.Join(dir, "compose.yaml"))
	require.NoError(t, err)
	var f composeFile
	require.NoError(t, yaml.Unmarshal(data, &f))

	dockerfile, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	require.NoError(t, err)
	targets := regexp.MustCompile(`(?m)^FROM \S+ AS (\S+)$`).FindAllStringSubmatch(string(dockerfile), -1)
	var stages []string
	for _, m := range targets {
		stages = append(stages, m[1])
	}
	builds := map[string]string{} // target → image
	for name, s := range f.Services {
		if s.Build == nil {
			continue
		}
		require.Contains(t, stages, s.Build.Target, "service %s builds a target of the Dockerfile", name)
		require.FileExists(t, filepath.Join(dir, s.Build.Context, "Dockerfile"), "service %s builds the repository", name)
		require.NotEmpty(t, s.Image, "service %s names the image it builds", name)
		builds[s.Build.Target] = s.Image
	}
	ex, ok := f.Services["executor"]
	require.True(t, ok)
	require.Equal(t, ex.Image, builds["executor"])
	require.Contains(t, ex.Volumes, "/var/run/docker.sock:/var/run/docker.sock")

	// Interpolate as compose would, with the required variables set.
	env := map[string]string{}
	for k, v := range ex.Environment {
		env[k] = interpolation.ReplaceAllStringFunc(v, func(m string) string {
			p := interpolation.FindStringSubmatch(m)
			switch p[2] {
			case "-":
				return p[3]
			case "?":
				return map[string]string{
					"SANDGATE_API_TOKEN":  "compose-test-token-0123456789",
					"SANDGATE_SECRET_KEY": "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
				}[p[1]]
			}
			require.Failf(t, "unset variable without a default", "%s in %s", m, k)
			return ""
		})
	}
	names := config.Names()
	for k := range env {
		if strings.HasPrefix(k, "SANDGATE_") {
			require.Contains(t, names, k, "compose sets %s, which is no setting", k)
		}
	}
	cfg, err := config.Load(nil, func(k string) (string, bool) { v, ok := env[k]; return v, ok }, io.Discard)
	require.NoError(t, err, "the executor's environment is a valid configuration")
	require.Equal(t, builds["gate"], cfg.GateImage, "the executor starts the gate image the file builds")
	// Checkpoints live on a named volume: in the container's own layer they
	// would be lost whenever compose recreates it.
	var onVolume bool
	for _, v := range ex.Volumes {
		src, dst, _ := strings.Cut(v, ":")
		_, named := f.Volumes[src]
		onVolume = onVolume || (named && dst == cfg.CheckpointDir)
	}
	require.True(t, onVolume, "SANDGATE_CHECKPOINT_DIR %s is a named volume of the executor", cfg.CheckpointDir)

	// Gates join the network the executor names, and reach the control
	// plane and the collector by service names on it.
	gates := ""
	for key, n := range f.Networks {
		if n.Name == cfg.GateNetwork {
			gates = key
		}
	}
	require.NotEmpty(t, gates, "SANDGATE_GATE_NETWORK is a network of the file, with that fixed name")
	_, gatePort, _ := strings.Cut(cfg.GateListen, ":")
	require.Equal(t, "http://executor:"+gatePort, cfg.ControlplaneURL)
	require.Contains(t, ex.Networks, gates)
	require.Equal(t, "http://otel-collector:4317", cfg.GateOTelEndpoint)
	require.Contains(t, f.Services["otel-collector"].Networks, gates)
	require.FileExists(t, filepath.Join(dir, "otel-collector.yaml"))
}
