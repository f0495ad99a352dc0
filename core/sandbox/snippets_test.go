package sandbox

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/sandbox/shell"
)

// shellRun runs an in-sandbox script with the host's bash the way an adapter
// execs it (`/bin/bash -c SCRIPT sandgate ARG…`), optionally inside a private
// mount namespace prepared by setup (run as root, with env), under umask,
// as uid/gid 65534, in dir. stdin is fed through a pipe by a goroutine
// playing the adapter, whose write error is reported: a script that exits
// without draining a large body makes it fail with EPIPE.
type shellRun struct {
	setup   string
	env     []string
	umask   string
	nobody  bool
	dir     string
	stdin   io.Reader
	timeout time.Duration
}

// shellResult is what a script did, and how feeding its stdin went.
type shellResult struct {
	code   int
	stdout string
	stderr string
	fedErr error
}

func (r shellRun) run(t *testing.T, script string, args ...string) shellResult {
	t.Helper()
	argv := append([]string{"/bin/bash", "-c", script, scriptName}, args...)
	if r.nobody {
		argv = append([]string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"}, argv...)
	}
	if r.umask != "" {
		argv = append([]string{"/bin/bash", "-c", `umask "$0" && exec "$@"`, r.umask}, argv...)
	}
	if r.setup != "" {
		argv = append([]string{"unshare", "-m", "--propagation", "private",
			"/bin/bash", "-ec", r.setup + "\nexec \"$@\"", "setup"}, argv...)
	}
	timeout := r.timeout
	if timeout == 0 {
		timeout = 20 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append([]string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}, r.env...)
	cmd.Dir = r.dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	fed := make(chan error, 1)
	if r.stdin == nil {
		fed <- nil
	} else {
		pr, pw, err := os.Pipe()
		require.NoError(t, err)
		cmd.Stdin = pr
		defer func() { _ = pw.Close() }()
		go func() {
			_, err := io.Copy(pw, r.stdin)
			if cerr := pw.Close(); err == nil {
				err = cerr
			}
			fed <- err
		}()
		defer func() { _ = pr.Close() }()
	}
	require.NoError(t, cmd.Start())
	if f, ok := cmd.Stdin.(*os.File); ok {
		require.NoError(t, f.Close(), "the script must hold the only read end")
	}
	err := cmd.Wait()
	require.NoError(t, ctx.Err(), "script timed out; stderr: %s", stderr.String())
	code := 0
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		code = exitErr.ExitCode()
	} else {
		require.NoError(t, err)
	}
	var fedErr error
	select {
	case fedErr = <-fed:
	case <-time.After(5 * time.Second):
		fedErr = errors.New("stdin feeder still blocked after the script exited")
	}
	return shellResult{code: code, stdout: stdout.String(), stderr: stderr.String(), fedErr: fedErr}
}

// libCall is a script of shell.Lib followed by body.
func libCall(body string) string { return shell.Lib + "\n" + body + "\n" }

// requireFault checks a script's exit code and that its marker agrees.
func requireFault(t *testing.T, res shellResult, code int, member string) scriptFault {
	t.Helper()
	require.Equal(t, code, res.code, "stderr: %s", res.stderr)
	f, ok := parseFault(res.stderr)
	require.True(t, ok, "no marker in stderr: %q", res.stderr)
	require.Equal(t, code, f.Code)
	require.Contains(t, res.stderr, faultMarker+strconv.Itoa(code)+":"+member+":")
	return f
}

// libCase is one call of a library function on path, run by run, and the
// outcome requireOutcome checks.
type libCase struct {
	name   string
	run    shellRun
	path   string
	code   int
	reason string
}

// requireOutcome checks a library call followed by `echo passed`: code 0
// means it must have passed; otherwise it must have faulted with code,
// naming member, and with reason unless that is empty. It reports whether
// the call passed.
func requireOutcome(t *testing.T, res shellResult, code int, member, reason string) bool {
	t.Helper()
	if code == 0 {
		require.Equal(t, 0, res.code, res.stderr)
		require.Equal(t, "passed\n", res.stdout)
		return true
	}
	f := requireFault(t, res, code, member)
	if reason != "" {
		require.Equal(t, reason, f.Reason)
	}
	return false
}

// sharedTempDir is t.TempDir opened to every uid (testing creates it 0700),
// so a script run as 65534 can reach what lies inside.
func sharedTempDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.Chmod(filepath.Dir(dir), 0o755))
	require.NoError(t, os.Chmod(dir, 0o755))
	return dir
}

// mkTree creates files (content "x") and directories (names ending in "/")
// under root.
func mkTree(t *testing.T, root string, names ...string) {
	t.Helper()
	for _, n := range names {
		p := filepath.Join(root, n)
		if strings.HasSuffix(n, "/") {
			require.NoError(t, os.MkdirAll(p, 0o755))
			continue
		}
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte("x"), 0o644))
	}
}

func TestShellLibFault(t *testing.T) {
	t.Parallel()
	res := shellRun{}.run(t, libCall(`__sg_fault 85 3 "$1"; echo unreachable`), "line one\nline\rtwo")
	f := requireFault(t, res, 85, "3")
	require.Equal(t, scriptFault{Code: 85, Member: 3, Reason: "line one line two"}, f)
	require.Empty(t, res.stdout)
	require.Equal(t, 1, strings.Count(res.stderr, "\n"))
}

func TestShellLibReason(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, in, want string }{
		{"coreutils", "mkdir: cannot create directory '/x': Read-only file system\n", "Read-only file system"},
		{"bash redirection", "bash: line 1: /x: Permission denied", "Permission denied"},
		{"name with colon space", "mv: cannot move 'a: b' to 'c: d': Device or resource busy\n\n", "Device or resource busy"},
		{"name with newline", "bash: line 1: /a: b\nc: No space left on device\n", "No space left on device"},
		{"several lines", "warning: x\nhead: error writing 'standard output': Disk quota exceeded", "Disk quota exceeded"},
		{"no separator", "plain", "plain"},
		{"empty", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := shellRun{}.run(t, libCall(`__sg_reason "$1"`), tc.in)
			require.Equal(t, 0, res.code)
			require.Equal(t, tc.want, res.stdout)
		})
	}
}

func TestShellLibPathFault(t *testing.T) {
	t.Parallel()
	root := sharedTempDir(t)
	mkTree(t, root, "dir/", "dir/file", "blk", "a/blk2", "real/")
	require.NoError(t, os.Symlink(filepath.Join(root, "real"), filepath.Join(root, "linkdir")))
	require.NoError(t, os.Symlink(filepath.Join(root, "nowhere"), filepath.Join(root, "dangling")))
	cases := []struct {
		name string
		path string
		code int
	}{
		{"existing parent", "dir/new", 0},
		{"missing parents", "x/y/z/new", 0},
		{"blocker at depth 1", "blk/new", ExitNotDirectory},
		{"blocker at depth 2", "a/blk2/sub/new", ExitNotDirectory},
		{"file target itself is fine", "dir/file", 0},
		{"symlink to directory in chain", "linkdir/new", 0},
		{"dangling symlink in chain", "dangling/new", ExitNotDirectory},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := shellRun{}.run(t, libCall(`__sg_pathfault "$1" 7; echo passed`), filepath.Join(root, tc.path))
			requireOutcome(t, res, tc.code, "7", "")
		})
	}
}

func TestShellLibDirFault(t *testing.T) {
	t.Parallel()
	root := sharedTempDir(t)
	mkTree(t, root, "dir/", "file")
	require.NoError(t, os.Symlink(filepath.Join(root, "dir"), filepath.Join(root, "linkdir")))
	for name, want := range map[string]int{"dir": ExitIsDirectory, "linkdir": ExitIsDirectory, "file": 0, "missing": 0} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			res := shellRun{}.run(t, libCall(`__sg_dirfault "$1" -; echo passed`), filepath.Join(root, name))
			requireOutcome(t, res, want, "-", "")
		})
	}
}

func TestShellLibUnreplaceable(t *testing.T) {
	t.Parallel()
	root := sharedTempDir(t)
	mkTree(t, root, "file", "src", "sp ace/\nnl\\b", "dir/")
	dev := filepath.Join(root, "null")
	require.NoError(t, syscall.Mknod(dev, syscall.S_IFCHR|0o666, int(unixMkdev(1, 3))))
	blk := filepath.Join(root, "blk")
	require.NoError(t, syscall.Mknod(blk, syscall.S_IFBLK|0o600, int(unixMkdev(7, 250))))
	require.NoError(t, os.Symlink(dev, filepath.Join(root, "devlink")))
	require.NoError(t, os.Symlink(filepath.Join(root, "sp ace"), filepath.Join(root, "via")))
	mounted := filepath.Join(root, "sp ace", "\nnl\\b")
	bind := shellRun{setup: `mount --bind -- "$SRC" "$DST"`, env: []string{"SRC=" + filepath.Join(root, "src"), "DST=" + mounted}}
	cases := []libCase{
		{"regular file", shellRun{}, filepath.Join(root, "file"), 0, ""},
		{"missing", shellRun{}, filepath.Join(root, "missing"), 0, ""},
		{"char device", shellRun{}, dev, ExitNotReplaceable, "device node"},
		{"block device", shellRun{}, blk, ExitNotReplaceable, "device node"},
		{"symlink to device", shellRun{}, filepath.Join(root, "devlink"), 0, ""},
		{"bind-mounted file with escaped name", bind, mounted, ExitNotReplaceable, "mount point"},
		{"mount point through a symlinked parent", bind, filepath.Join(root, "via", "\nnl\\b"), ExitNotReplaceable, "mount point"},
		{"sibling of a mount point", bind, filepath.Join(root, "file"), 0, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := tc.run.run(t, libCall(`__sg_unreplaceable "$1" 2; echo passed`), tc.path)
			requireOutcome(t, res, tc.code, "2", tc.reason)
		})
	}
}

// unixMkdev is the Linux device number of major:minor.
func unixMkdev(major, minor uint32) uint64 {
	return uint64(major)<<8 | uint64(minor&0xff) | uint64(minor&^0xff)<<12
}

func TestShellLibMkdirs(t *testing.T) {
	t.Parallel()
	root := sharedTempDir(t)
	mkTree(t, root, "blk", "ro/", "locked/")
	require.NoError(t, os.Chmod(filepath.Join(root, "locked"), 0o755))
	ro := shellRun{setup: `mount --bind -- "$D" "$D" && mount -o remount,bind,ro -- "$D"`, env: []string{"D=" + filepath.Join(root, "ro")}}
	cases := []libCase{
		{"new chain", shellRun{}, "n1/n2/n3", 0, ""},
		{"existing", shellRun{}, "ro", 0, ""},
		{"blocked", shellRun{}, "blk/n", ExitNotDirectory, "Not a directory"},
		{"read-only", ro, "ro/n", ExitNotWritable, "Read-only file system"},
		{"permission", shellRun{nobody: true}, "locked/n", ExitNotWritable, "Permission denied"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(root, tc.path)
			res := tc.run.run(t, libCall(`umask 077; __sg_mkdirs "$1" 4; echo passed`), dir)
			if requireOutcome(t, res, tc.code, "4", tc.reason) {
				st, err := os.Stat(dir)
				require.NoError(t, err)
				require.True(t, st.IsDir())
				require.Equal(t, os.FileMode(0o755), st.Mode().Perm(), "umask 022 beats the caller's 077")
			}
		})
	}
}

func TestShellLibKeepMode(t *testing.T) {
	t.Parallel()
	root := sharedTempDir(t)
	mkTree(t, root, "exec", "tmp1", "tmp2", "tmp3", "target")
	require.NoError(t, os.Chmod(filepath.Join(root, "exec"), 0o751))
	require.NoError(t, os.Symlink(filepath.Join(root, "exec"), filepath.Join(root, "link")))
	for _, n := range []string{"tmp1", "tmp2", "tmp3"} {
		require.NoError(t, os.Chmod(filepath.Join(root, n), 0o600))
	}
	cases := []struct {
		name, target, tmp string
		want              os.FileMode
	}{
		{"regular target keeps its mode", "exec", "tmp1", 0o751},
		{"symlink target lands 0644", "link", "tmp2", 0o644},
		{"new target lands 0644", "new", "tmp3", 0o644},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := shellRun{}.run(t, libCall(`__sg_keepmode "$1" "$2" -`), filepath.Join(root, tc.target), filepath.Join(root, tc.tmp))
			require.Equal(t, 0, res.code, res.stderr)
			st, err := os.Stat(filepath.Join(root, tc.tmp))
			require.NoError(t, err)
			require.Equal(t, tc.want, st.Mode().Perm())
		})
	}
	t.Run("chmod fails", func(t *testing.T) {
		t.Parallel()
		res := shellRun{nobody: true}.run(t, libCall(`__sg_keepmode "$1" "$2" 0`), filepath.Join(root, "target"), filepath.Join(root, "tmp1"))
		f := requireFault(t, res, ExitNotWritable, "0")
		require.Equal(t, "Operation not permitted", f.Reason)
	})
}

func TestShellLibLand(t *testing.T) {
	t.Parallel()
	root := sharedTempDir(t)
	mkTree(t, root, "ok/tmp", "ok/target", "dir/tmp", "dir/target/", "busy/tmp", "busy/target", "src",
		"locked/")
	require.NoError(t, os.Chmod(filepath.Join(root, "ok/target"), 0o700))
	nobodyTmp := filepath.Join(root, "locked", "tmp")
	require.NoError(t, os.WriteFile(nobodyTmp, []byte("n"), 0o600))
	require.NoError(t, os.Chown(nobodyTmp, 65534, 65534))
	busy := shellRun{setup: `mount --bind -- "$SRC" "$DST"`, env: []string{"SRC=" + filepath.Join(root, "src"), "DST=" + filepath.Join(root, "busy/target")}}
	cases := []libCase{
		{"lands", shellRun{}, "ok", 0, ""},
		{"directory target", shellRun{}, "dir", ExitIsDirectory, "Is a directory"},
		{"rename onto a mount point", busy, "busy", ExitNotWritable, "Device or resource busy"},
		{"parent not writable", shellRun{nobody: true}, "locked", ExitNotWritable, "Permission denied"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(root, tc.path)
			res := tc.run.run(t, libCall(`__sg_land "$1" "$2" 5; echo passed`), filepath.Join(dir, "target"), filepath.Join(dir, "tmp"))
			if requireOutcome(t, res, tc.code, "5", tc.reason) {
				st, err := os.Lstat(filepath.Join(dir, "target"))
				require.NoError(t, err)
				require.Equal(t, os.FileMode(0o700), st.Mode())
				require.NoFileExists(t, filepath.Join(dir, "tmp"))
			}
		})
	}
}
