//go:build integration

package e2e_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/adapters/docker/dockertest"
)

// sdkTypeScriptDir is the TypeScript SDK, from this package's directory.
var sdkTypeScriptDir = filepath.Join("..", "sdk", "typescript")

// TestTypeScriptSDK builds the TypeScript SDK (sdk/typescript) and runs its
// tests against a real `executor serve` on Docker, with the agent (procs
// and ports need it): every call of the SDK, its error mapping, and a
// 256 MiB streamed upload and download in bounded memory. The SDK's tests
// find the executor in SANDGATE_URL and SANDGATE_TOKEN, and delete every
// session they make; the world's label removes whatever a crash left.
func TestTypeScriptSDK(t *testing.T) {
	npm := requireNode(t)
	w := newWorld(t)
	p := w.start(t, "sdk-typescript", map[string]string{"SANDGATE_AGENT_IMAGE": dockertest.AgentImage(t, w.cli)})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Minute)
	defer cancel()
	env := append(os.Environ(), "SANDGATE_URL="+p.url, "SANDGATE_TOKEN="+procToken)

	// npm ci deletes node_modules first: a developer's install is kept, and
	// only a fresh clone pays for one.
	if _, err := os.Stat(filepath.Join(sdkTypeScriptDir, "node_modules")); errors.Is(err, fs.ErrNotExist) {
		runNPM(ctx, t, npm, env, "ci")
	}
	runNPM(ctx, t, npm, env, "run", "build")
	out := runNPM(ctx, t, npm, env, "test")
	t.Logf("npm test:\n%s", out)
}

// requireNode returns npm's path. Without node and npm the test fails under
// CI=true, where it must run, and skips elsewhere.
func requireNode(t *testing.T) string {
	t.Helper()
	npm, errNPM := exec.LookPath("npm")
	_, errNode := exec.LookPath("node")
	if err := errors.Join(errNPM, errNode); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("node and npm are needed for the TypeScript SDK's tests: %v", err)
		}
		t.Skipf("node and npm are needed for the TypeScript SDK's tests: %v", err)
	}
	return npm
}

// runNPM runs npm with args in the SDK's directory and returns its output,
// failing the test with it on a non-zero exit.
func runNPM(ctx context.Context, t *testing.T, npm string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, npm, args...)
	cmd.Dir = sdkTypeScriptDir
	cmd.Env = env
	// npm runs node through a shell: the context's end kills the whole
	// process group, so no test process outlives it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "npm %s:\n%s", strings.Join(args, " "), out)
	return string(out)
}
