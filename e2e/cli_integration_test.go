//go:build integration

package e2e_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/core/session"
)

// cli runs the executor binary's CLI against p and returns its stdout,
// stderr and exit code.
func cli(t *testing.T, p *proc, stdin []byte, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(executorBinary(t), args...)
	cmd.Env = append(os.Environ(), "SANDGATE_URL="+p.url, "SANDGATE_API_TOKEN="+procToken)
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return out.String(), errb.String(), code
}

// TestCLI drives a real `executor serve` with the CLI of the same binary:
// create, exec (its exit code is the command's), cp both ways, export, ls,
// the tree commands (mkdir, ls, stat, rm of a path), rm, and the helpful errors of refused calls.
func TestCLI(t *testing.T) {
	w := newWorld(t)
	p := w.start(t, "cli", nil)
	sid := domain.NewID("ses").String()
	dir := t.TempDir()

	out, errs, code := cli(t, p, nil, "create", sid)
	require.Zero(t, code, errs)
	require.Contains(t, out, "running")
	t.Cleanup(func() { cli(t, p, nil, "rm", sid) })

	out, _, code = cli(t, p, nil, "exec", sid, "--", "echo out; echo err >&2; exit 7")
	require.Equal(t, 7, code, "exec exits with the command's code")
	require.Equal(t, "out\n", out)

	local := filepath.Join(dir, "in.txt")
	require.NoError(t, os.WriteFile(local, []byte("through the CLI\n"), 0o600))
	_, errs, code = cli(t, p, nil, "cp", local, sid+":/workspace/in.txt")
	require.Zero(t, code, errs)
	back := filepath.Join(dir, "back.txt")
	_, errs, code = cli(t, p, nil, "cp", sid+":/workspace/in.txt", back)
	require.Zero(t, code, errs)
	got, err := os.ReadFile(back)
	require.NoError(t, err)
	require.Equal(t, "through the CLI\n", string(got))

	out, errs, code = cli(t, p, nil, "export", sid)
	require.Zero(t, code, errs)
	require.Contains(t, tarNames(t, readCloser(out)), "workspace/in.txt")

	out, errs, code = cli(t, p, nil, "ls", "--json")
	require.Zero(t, code, errs)
	require.Contains(t, out, `"`+sid+`"`)

	// The tree commands, as README's transcript shows them.
	out, errs, code = cli(t, p, nil, "mkdir", "-p", sid+":/workspace/out/logs")
	require.Zero(t, code, errs)
	require.Equal(t, "made directory /workspace/out/logs in session "+sid+"\n", out)
	out, errs, code = cli(t, p, nil, "ls", sid+":/workspace")
	require.Zero(t, code, errs)
	require.Regexp(t, `^-rw-r--r-- +16 \S+ \S+ in\.txt\ndrwxr-xr-x +\d+ \S+ \S+ out\n$`, out)
	out, errs, code = cli(t, p, nil, "stat", sid+":/workspace/in.txt")
	require.Zero(t, code, errs)
	require.Contains(t, out, "type      file\nsize      16\n")
	_, errs, code = cli(t, p, nil, "rm", sid, "/workspace/out")
	require.Equal(t, 2, code, "a path apart from its session is a usage error: %s", errs)
	_, errs, code = cli(t, p, nil, "rm", sid+":/workspace/out")
	require.NotZero(t, code, "a non-empty directory needs -r")
	require.Contains(t, errs, "rm -r removes it")
	out, errs, code = cli(t, p, nil, "rm", "-r", sid+":/workspace/out")
	require.Zero(t, code, errs)
	require.Equal(t, "removed /workspace/out from session "+sid+"\n", out)
	_, errs, code = cli(t, p, nil, "stat", sid+":/workspace/out")
	require.NotZero(t, code)
	require.Contains(t, strings.ToLower(errs), "no such file")

	// Refusals name the problem and exit non-zero.
	_, errs, code = cli(t, p, nil, "cp", sid+":/workspace/missing", filepath.Join(dir, "x"))
	require.NotZero(t, code)
	require.Contains(t, strings.ToLower(errs), "no such file")
	_, errs, code = cli(t, p, nil, "exec", domain.NewID("ses").String(), "--", "true")
	require.NotZero(t, code)
	require.Contains(t, strings.ToLower(errs), "not found")

	_, errs, code = cli(t, p, nil, "rm", sid)
	require.Zero(t, code, errs)
	_, _, code = cli(t, p, nil, "exec", sid, "--", "true")
	require.NotZero(t, code, "the session is gone")
}

// TestAPIErrorCodes: the sandbox's sentinels cross the wire from a real
// engine as the same errors (their stable codes), before and after the
// session exists.
func TestAPIErrorCodes(t *testing.T) {
	w := newWorld(t)
	c := w.start(t, "codes", nil).client(t)
	ctx := ctxMinutes(t, 3)
	sid := domain.NewID("ses")
	_, err := c.Exec(ctx, sid, sandbox.ExecRequest{Command: "true"})
	require.ErrorIs(t, err, sandbox.ErrNotFound)
	_, err = c.Provision(ctx, sid, session.Request{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Delete(ctx, sid, false) })
	_, err = c.Exec(ctx, sid, sandbox.ExecRequest{Command: "echo x > /workspace/f; mkdir -p /workspace/d; head -c 5000000 /dev/zero > /workspace/big"})
	require.NoError(t, err)

	for _, tc := range []struct {
		path string
		want error
	}{
		{"/workspace/missing", sandbox.ErrFileNotExist},
		{"/workspace/d", sandbox.ErrIsDirectory},
		{"/workspace/f/x", sandbox.ErrNotDirectory},
		{"/dev/null", sandbox.ErrNotRegularFile},
		{"relative/path", session.ErrInvalidRequest},
	} {
		_, _, err := c.ReadFile(ctx, sid, tc.path, 0)
		require.ErrorIs(t, err, tc.want, tc.path)
	}
	_, _, err = c.ReadFile(ctx, sid, "/workspace/big", 1024)
	require.ErrorIs(t, err, sandbox.ErrFileTooLarge)
	err = c.WriteFile(ctx, sid, "/proc/x", strings.NewReader("x"), 1)
	require.ErrorIs(t, err, sandbox.ErrNotWritable)
	_, err = c.Provision(ctx, sid, session.Request{Image: "busybox:1.35"})
	require.ErrorIs(t, err, sandbox.ErrSpecMismatch)
	_, err = c.Exec(ctx, sid, sandbox.ExecRequest{Command: "true", Timeout: -time.Second})
	require.ErrorIs(t, err, session.ErrInvalidRequest)
}

func readCloser(s string) io.ReadCloser { return io.NopCloser(strings.NewReader(s)) }
