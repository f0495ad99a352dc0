package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/sandgate/sandgate/internal/proctest"
)

// binDir holds the agent binary the tests run, built once: a directory
// every user may enter, so a test can run it as another user.
var binDir string

// TestMain builds the agent (static, as the Dockerfile does) and fails the
// run when a test leaves a process or a goroutine behind.
func TestMain(m *testing.M) {
	code, err := buildAndRun(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "agent test:", err)
		code = 1
	}
	os.Exit(code)
}

func buildAndRun(m *testing.M) (int, error) {
	dir, err := os.MkdirTemp("", "sandgate-agent-test-")
	if err != nil {
		return 1, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	if err := os.Chmod(dir, 0o755); err != nil {
		return 1, err
	}
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "sandgate-agent"), ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return 1, fmt.Errorf("go build: %w: %s", err, out)
	}
	binDir = dir
	return proctest.Run(m), nil
}
