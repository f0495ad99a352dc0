package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/internal/proctest"
)

// dropHelperEnv makes the test binary, re-executed, run dropPrivileges in a
// process of its own (TestMain): changing ids would otherwise change the
// test runner's.
const dropHelperEnv = "SANDGATE_TEST_DROP_PRIVILEGES"

func TestMain(m *testing.M) {
	if os.Getenv(dropHelperEnv) == "own-group" {
		// What a runtime does when it starts a process as uid:gid: the
		// primary group is listed as a supplementary one too.
		err := errors.Join(syscall.Setgroups([]int{64251}), syscall.Setgid(64251), syscall.Setuid(64250))
		fmt.Printf("start: %v\nown group admitted: %v\nown group refused: %v\n", err,
			verifyDropped(64250, 64251, true), verifyDropped(64250, 64251, false))
		os.Exit(0)
	}
	if os.Getenv(dropHelperEnv) != "" {
		err := dropPrivileges(64250, 64251)
		fmt.Printf("result: %v uid=%d gid=%d\n", err, os.Getuid(), os.Getgid())
		os.Exit(0)
	}
	proctest.Main(m) // no process or goroutine outlives the tests
}

func TestDropPrivileges(t *testing.T) {
	t.Parallel()
	out := runDropHelper(t, "1")
	if os.Getuid() != 0 {
		// Without root the first step is refused, and nothing changes.
		require.Contains(t, string(out), "result: setgroups(none): operation not permitted")
		return
	}
	// verifyDropped passed inside: ids, no groups, setuid(0) and setgid(0)
	// refused, no capabilities.
	require.Contains(t, string(out), "result: <nil> uid=64250 gid=64251")
}

func TestVerifyDroppedAsIs(t *testing.T) {
	t.Parallel()
	// The test process keeps its ids: verification must notice.
	require.Error(t, verifyDropped(64250, 64250, false))
	require.Error(t, verifyDropped(64250, 64250, true))
}

// TestVerifyUnprivilegedOwnGroup: a process started as uid:gid (with gid
// among its groups, as containerd does) passes VerifyUnprivileged, and
// only that group is admitted.
func TestVerifyUnprivilegedOwnGroup(t *testing.T) {
	t.Parallel()
	if os.Getuid() != 0 {
		failOrSkipWithoutRoot(t)
	}
	out := runDropHelper(t, "own-group")
	require.Contains(t, string(out), "start: <nil>\nown group admitted: <nil>\n")
	require.Contains(t, string(out), "own group refused: supplementary groups [64251] remain")
}

// runDropHelper re-executes the test binary in mode (TestMain) and returns
// its output.
func runDropHelper(t *testing.T, mode string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0])
	cmd.Env = append(os.Environ(), dropHelperEnv+"="+mode)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	return out
}

func TestNoCapabilities(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(content string) string {
		p := filepath.Join(dir, fmt.Sprintf("status%d", time.Now().UnixNano()))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
		return p
	}
	none := "Name:\tgate\nCapInh:\t0000000000000000\nCapPrm:\t0000000000000000\nCapEff:\t0000000000000000\nCapBnd:\t000001ffffffffff\nCapAmb:\t0000000000000000\n"
	require.NoError(t, noCapabilities(write(none)))
	for name, content := range map[string]string{
		"effective": "CapPrm:\t0000000000000000\nCapEff:\t0000000000001000\nCapAmb:\t0000000000000000\n",
		"permitted": "CapPrm:\t0000000000001000\nCapEff:\t0000000000000000\nCapAmb:\t0000000000000000\n",
		"ambient":   "CapPrm:\t0000000000000000\nCapEff:\t0000000000000000\nCapAmb:\t0000000000001000\n",
		"missing":   "CapPrm:\t0000000000000000\nCapEff:\t0000000000000000\n",
	} {
		require.Error(t, noCapabilities(write(content)), name)
	}
	require.Error(t, noCapabilities(filepath.Join(dir, "absent")))
}
