//go:build integration

package e2e_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/adapters/docker/dockertest"
)

// pythonForSDK is Debian's interpreter, the one that sees python3-pytest,
// python3-httpx and python3-websockets: the python3 first on a developer's
// PATH may be another build that does not.
const pythonForSDK = "/usr/bin/python3"

// TestPythonSDK runs the Python SDK's tests (sdk/python/tests) against a
// real `executor serve` on Docker, with the in-sandbox agent that procs and
// ports need: every call of both clients, the error codes of bad input, a
// 256 MiB streamed transfer in bounded memory. The tests find the executor
// in SANDGATE_URL and SANDGATE_TOKEN; each deletes the sessions it made,
// and the world's label removes whatever a crash left.
func TestPythonSDK(t *testing.T) {
	requirePythonSDKDeps(t)
	w := newWorld(t)
	p := w.start(t, "pysdk", map[string]string{"SANDGATE_AGENT_IMAGE": dockertest.AgentImage(t, w.cli)})
	root, err := filepath.Abs("..")
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute)
	defer cancel()
	// -p no:cacheprovider and PYTHONDONTWRITEBYTECODE: a run leaves nothing
	// in the tree.
	cmd := exec.CommandContext(ctx, pythonForSDK, "-m", "pytest", "-q", "-p", "no:cacheprovider", "sdk/python/tests")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "SANDGATE_URL="+p.url, "SANDGATE_TOKEN="+procToken, "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "pytest sdk/python/tests:\n%s", out)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	summary := lines[len(lines)-1]
	if testing.Verbose() {
		t.Log(string(out))
	}
	t.Log(summary)
	// With the executor given, no test has a reason to skip: a skip here
	// is a test that silently did not run.
	require.NotContains(t, summary, "skipped", "pytest sdk/python/tests:\n%s", out)
}

// requirePythonSDKDeps fails under CI=true, and skips otherwise, when
// Debian's python3 lacks a package the SDK or its tests need.
func requirePythonSDKDeps(t *testing.T) {
	t.Helper()
	out, err := exec.Command(pythonForSDK, "-c", "import pytest, httpx, websockets").CombinedOutput()
	if err == nil {
		return
	}
	msg := pythonForSDK + " cannot import pytest, httpx and websockets " +
		"(apt-get install -y python3-pytest python3-httpx python3-websockets): " + err.Error() + "\n" + string(out)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}
