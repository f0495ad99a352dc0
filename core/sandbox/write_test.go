package sandbox

import (
	"bytes"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/sandbox/shell"
)

func TestWriteArgs(t *testing.T) {
	t.Parallel()
	argv, err := WriteArgs("/work space/-x", 42)
	require.NoError(t, err)
	require.Len(t, argv, 7)
	require.Equal(t, []string{"/bin/bash", "-c", shell.Write, scriptName, "/work space/-x"}, argv[:5])
	require.Regexp(t, `^/work space/\.sandgate-write-[0-9a-f]{16}$`, argv[5])
	require.Equal(t, "42", argv[6])
	again, err := WriteArgs("/work space/-x", 42)
	require.NoError(t, err)
	require.NotEqual(t, argv[5], again[5], "every write gets a fresh temporary name")

	requireArgsRefused(t, WriteArgs, []argsCase{
		{"empty", "", 0, "path: empty", nil},
		{"relative", "a/b", 0, "not absolute", nil},
		{"dot dot", "/a/../b", 0, "not clean", nil},
		{"trailing slash", "/a/", 0, "not clean", nil},
		{"double slash", "//a", 0, "not clean", nil},
		{"NUL", "/a\x00b", 0, "NUL", nil},
		{"too long", "/" + strings.Repeat("a", maxPathBytes), 0, "longer than 4095", nil},
		{"root", "/", 0, "is a directory", ErrIsDirectory},
		{"negative size", "/a", -1, "write size -1", ErrSizeNotALength},
	})
}

// argsCase is an invalid input to WriteArgs or ReadArgs and the error it
// must get: a message part, and a sentinel if one applies.
type argsCase struct {
	name, path string
	n          int64
	want       string
	is         error
}

// requireArgsRefused runs every case through args and checks the refusal.
func requireArgsRefused(t *testing.T, args func(string, int64) ([]string, error), cases []argsCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			argv, err := args(tc.path, tc.n)
			require.Nil(t, argv)
			require.ErrorContains(t, err, tc.want)
			if tc.is != nil {
				require.ErrorIs(t, err, tc.is)
			}
		})
	}
}

func FuzzCheckFilePath(f *testing.F) {
	for _, s := range []string{"/a/b", "/", "", "a", "/a/../b", "/a\x00", "//", "/a/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		err := CheckFilePath(p)
		if err != nil {
			require.NotEmpty(t, err.Error())
			return
		}
		require.True(t, path.IsAbs(p))
		require.Equal(t, path.Clean(p), p)
		require.NotContains(t, p, "\x00")
		require.NotEqual(t, "/", p)
	})
}

func TestClassifyWrite(t *testing.T) {
	t.Parallel()
	require.NoError(t, ClassifyWrite("/a", 0, ""))
	err := ClassifyWrite("/a", ExitNotWritable, "sandgate-fault:85:-:Read-only file system\n")
	var pnw *PathNotWritableError
	require.ErrorAs(t, err, &pnw)
	require.Equal(t, PathNotWritableError{Path: "/a", Reason: "Read-only file system"}, *pnw)
	require.ErrorIs(t, ClassifyWrite("/a", ExitSizeMismatch, ""), ErrSizeMismatch)
	require.ErrorContains(t, ClassifyWrite("/a", 127, "bash: not found"), "exited 127")
}

// writeCase is one single write run against real files in its own directory.
type writeCase struct {
	name   string
	prep   func(t *testing.T, dir string)         // the fixture, as root
	run    func(dir string) shellRun              // how the script runs (default: root, no namespace)
	target string                                 // relative to dir
	body   []byte                                 // what the source yields
	size   *int64                                 // announced size; nil means len(body)
	code   int                                    // expected exit code
	reason string                                 // expected marker reason ("" = not checked)
	check  func(t *testing.T, dir, target string) // the state afterwards
}

// bigBody is a body larger than a pipe's buffer: refusing it without
// draining would block its sender.
var bigBody = bytes.Repeat([]byte("0123456789abcdef"), 16<<10)

// allBytes holds every byte value, twice.
var allBytes = func() []byte {
	b := make([]byte, 512)
	for i := range b {
		b[i] = byte(i)
	}
	return b
}()

func (c writeCase) exec(t *testing.T) {
	dir := sharedTempDir(t)
	if c.prep != nil {
		c.prep(t, dir)
	}
	target := filepath.Join(dir, c.target)
	size := int64(len(c.body))
	if c.size != nil {
		size = *c.size
	}
	argv, err := WriteArgs(target, size)
	require.NoError(t, err)
	r := shellRun{}
	if c.run != nil {
		r = c.run(dir)
	}
	r.stdin = io.LimitReader(bytes.NewReader(c.body), size+1)
	if r.dir == "" {
		r.dir = dir
	}
	res := r.run(t, argv[2], argv[4:]...)
	require.NoError(t, res.fedErr, "the body must be drained; stderr: %s", res.stderr)
	requireNoResidue(t, dir)
	if c.code == 0 {
		require.Equal(t, 0, res.code, res.stderr)
		require.Empty(t, res.stdout)
		require.NoError(t, ClassifyWrite(target, res.code, res.stderr))
	} else {
		f := requireFault(t, res, c.code, "-")
		if c.reason != "" {
			require.Equal(t, c.reason, f.Reason)
		}
		requireClassified(t, ClassifyWrite(target, res.code, res.stderr), c.code, target, f.Reason)
	}
	if c.check != nil {
		c.check(t, dir, target)
	}
}

// requireClassified checks that err carries the sentinel of code and names
// path (with the reason, for a not-writable fault).
func requireClassified(t *testing.T, err error, code int, path, reason string) {
	t.Helper()
	require.ErrorIs(t, err, classSentinel(code))
	require.Contains(t, err.Error(), path)
	if code == ExitNotWritable {
		var pnw *PathNotWritableError
		require.ErrorAs(t, err, &pnw)
		require.Equal(t, PathNotWritableError{Path: path, Reason: reason}, *pnw)
	}
}

// requireNoResidue fails if a temporary write file is left anywhere under
// root.
func requireNoResidue(t *testing.T, root string) {
	t.Helper()
	require.NoError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		require.False(t, strings.HasPrefix(d.Name(), TempPrefix), "residue %s", p)
		return nil
	}))
}

// requireFile checks a path holds a regular file with content and mode.
func requireFile(t *testing.T, p string, content []byte, mode os.FileMode) {
	t.Helper()
	st, err := os.Lstat(p)
	require.NoError(t, err)
	require.True(t, st.Mode().IsRegular(), "%s is %v", p, st.Mode())
	require.Equal(t, mode, st.Mode().Perm(), p)
	got, err := os.ReadFile(p)
	require.NoError(t, err)
	require.Equal(t, content, got)
}

// writeFile is a prep step: a file with content and mode.
func writeFile(t *testing.T, p, content string, mode os.FileMode) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(content), mode))
	require.NoError(t, os.Chmod(p, mode))
}

// size is an announced size that differs from the body's length.
func size(n int64) *int64 { return &n }

// has checks the target afterwards holds content with mode.
func has(content []byte, mode os.FileMode) func(*testing.T, string, string) {
	return func(t *testing.T, _, p string) { requireFile(t, p, content, mode) }
}

// isOld checks p still holds "old" with mode 0640.
func isOld(t *testing.T, p string) { requireFile(t, p, []byte("old"), 0o640) }

// untouched checks the target afterwards still holds "old" with mode 0640.
func untouched(t *testing.T, _, p string) { isOld(t, p) }

// oldAt checks name under the case directory still holds "old".
func oldAt(name string) func(*testing.T, string, string) {
	return func(t *testing.T, dir, _ string) { isOld(t, filepath.Join(dir, name)) }
}

// isAbsent checks nothing exists at p.
func isAbsent(t *testing.T, p string) {
	t.Helper()
	_, err := os.Lstat(p)
	require.ErrorIs(t, err, fs.ErrNotExist)
}

// absent checks nothing exists at the target afterwards.
func absent(t *testing.T, _, p string) { isAbsent(t, p) }

// old is a prep step: the target holds "old", mode 0640.
func old(name string) func(*testing.T, string) {
	return func(t *testing.T, dir string) { writeFile(t, filepath.Join(dir, name), "old", 0o640) }
}

// inNamespace runs the script after setup in a private mount namespace,
// with D set to the case's directory.
func inNamespace(setup string) func(string) shellRun {
	return func(dir string) shellRun { return shellRun{setup: setup, env: []string{"D=" + dir}} }
}

// asNobody runs the script as uid/gid 65534.
func asNobody(string) shellRun { return shellRun{nobody: true} }

const (
	roSetup     = `mount --bind -- "$D/ro" "$D/ro" && mount -o remount,bind,ro -- "$D/ro"`
	bindSetup   = `mount --bind -- "$D/src" "$D/target"`
	tmpfsSetup  = `mount -t tmpfs -o size=64k tmpfs "$D/small"`
	lockedSetup = `chmod 0755 "$D/locked"`
)

func TestWriteScriptLands(t *testing.T) {
	t.Parallel()
	cases := []writeCase{
		{name: "new file with new parents under umask 077", target: "a/b/c.txt", body: []byte("hello"),
			run: func(string) shellRun { return shellRun{umask: "077"} },
			check: func(t *testing.T, _, p string) {
				requireFile(t, p, []byte("hello"), 0o644)
				for _, d := range []string{filepath.Dir(p), filepath.Dir(filepath.Dir(p))} {
					st, err := os.Stat(d)
					require.NoError(t, err)
					require.Equal(t, os.FileMode(0o755), st.Mode().Perm(), d)
				}
			}},
		{name: "overwrite truncates and keeps the mode", prep: old("t"), target: "t", body: []byte("n"),
			check: has([]byte("n"), 0o640)},
		{name: "executable stays executable", target: "run.sh", body: []byte("#!/bin/sh\n"),
			prep:  func(t *testing.T, dir string) { writeFile(t, filepath.Join(dir, "run.sh"), "old", 0o755) },
			check: has([]byte("#!/bin/sh\n"), 0o755)},
		{name: "empty new file", target: "e", body: nil, check: has([]byte{}, 0o644)},
		{name: "empty overwrite", prep: old("t"), target: "t", body: []byte{}, check: has([]byte{}, 0o640)},
		{name: "binary", target: "bin", body: allBytes, check: has(allBytes, 0o644)},
		{name: "large", target: "big", body: bigBody, check: has(bigBody, 0o644)},
		replacedLink("symlink target is replaced, pointee untouched",
			func(t *testing.T, p string) { writeFile(t, p, "old", 0o640) }, isOld),
		replacedLink("dangling symlink target is replaced", nil, isAbsent),
		replacedLink("symlink to a device is replaced", mknodChar, requireCharDev),
		{name: "parent through a symlinked directory", target: "via/f", body: []byte("x"),
			prep: func(t *testing.T, dir string) {
				require.NoError(t, os.Mkdir(filepath.Join(dir, "real"), 0o755))
				require.NoError(t, os.Symlink("real", filepath.Join(dir, "via")))
			},
			check: func(t *testing.T, dir, _ string) {
				requireFile(t, filepath.Join(dir, "real", "f"), []byte("x"), 0o644)
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.exec(t)
		})
	}
}

// replacedLink is a write onto a symlink "link" to "pointee" (made by
// point, if any): the link is supplanted by a regular 0644 file and kept
// checks the pointee is untouched.
func replacedLink(name string, point, kept func(t *testing.T, p string)) writeCase {
	return writeCase{name: name, target: "link", body: []byte("new"),
		prep: func(t *testing.T, dir string) {
			if point != nil {
				point(t, filepath.Join(dir, "pointee"))
			}
			require.NoError(t, os.Symlink("pointee", filepath.Join(dir, "link")))
		},
		check: func(t *testing.T, dir, p string) {
			requireFile(t, p, []byte("new"), 0o644)
			kept(t, filepath.Join(dir, "pointee"))
		}}
}

// mknodChar makes a character device 1:3 (/dev/null's numbers) at p.
func mknodChar(t *testing.T, p string) {
	t.Helper()
	require.NoError(t, syscall.Mknod(p, syscall.S_IFCHR|0o666, int(unixMkdev(1, 3))))
}

// requireCharDev checks p is still the character device mknodChar made.
func requireCharDev(t *testing.T, p string) {
	t.Helper()
	var st syscall.Stat_t
	require.NoError(t, syscall.Lstat(p, &st))
	require.Equal(t, uint32(syscall.S_IFCHR), st.Mode&syscall.S_IFMT)
	require.Equal(t, unixMkdev(1, 3), st.Rdev)
}

func TestWriteScriptRefuses(t *testing.T) {
	t.Parallel()
	blocker := func(name string) func(*testing.T, string) {
		return func(t *testing.T, dir string) { writeFile(t, filepath.Join(dir, name), "old", 0o640) }
	}
	dirTarget := func(t *testing.T, dir string) { writeFile(t, filepath.Join(dir, "target", "inner"), "old", 0o640) }
	dirKept := func(t *testing.T, _, p string) { isOld(t, filepath.Join(p, "inner")) }
	ro := func(t *testing.T, dir string) { writeFile(t, filepath.Join(dir, "ro", "target"), "old", 0o640) }
	locked := func(t *testing.T, dir string) { writeFile(t, filepath.Join(dir, "locked", "target"), "old", 0o640) }
	cases := []writeCase{
		{name: "blocker at depth 1", prep: blocker("blk"), target: "blk/x", body: []byte("x"),
			code: ExitNotDirectory, reason: "Not a directory", check: oldAt("blk")},
		{name: "blocker at depth 2", prep: blocker("a/blk"), target: "a/blk/b/x", body: []byte("x"),
			code: ExitNotDirectory, check: oldAt("a/blk")},
		{name: "blocker with a 256 KiB body", prep: blocker("blk"), target: "blk/b/x", body: bigBody,
			code: ExitNotDirectory, check: oldAt("blk")},
		{name: "directory target", prep: dirTarget, target: "target", body: []byte("x"),
			code: ExitIsDirectory, reason: "Is a directory", check: dirKept},
		{name: "directory target with a 256 KiB body", prep: dirTarget, target: "target", body: bigBody,
			code: ExitIsDirectory, check: dirKept},
		{name: "symlink to a directory", target: "link", body: []byte("x"), code: ExitIsDirectory,
			prep: func(t *testing.T, dir string) {
				dirTarget(t, dir)
				require.NoError(t, os.Symlink("target", filepath.Join(dir, "link")))
			},
			check: func(t *testing.T, dir, p string) {
				dest, err := os.Readlink(p)
				require.NoError(t, err)
				require.Equal(t, "target", dest)
				isOld(t, filepath.Join(dir, "target", "inner"))
			}},
		{name: "device node", target: "null", body: bigBody, code: ExitNotReplaceable, reason: "device node",
			prep:  func(t *testing.T, dir string) { mknodChar(t, filepath.Join(dir, "null")) },
			check: func(t *testing.T, _, p string) { requireCharDev(t, p) }},
		{name: "device node as nobody in a root-owned directory", target: "locked/null", body: []byte("x"),
			code: ExitNotReplaceable, run: asNobody,
			prep:  func(t *testing.T, dir string) { locked(t, dir); mknodChar(t, filepath.Join(dir, "locked", "null")) },
			check: func(t *testing.T, _, p string) { requireCharDev(t, p) }},
		{name: "bind-mounted file in a read-only directory", target: "ro/target", body: bigBody,
			code: ExitNotReplaceable, reason: "mount point",
			run:   inNamespace(roSetup + ` && mount --bind -- "$D/src" "$D/ro/target"`),
			prep:  func(t *testing.T, dir string) { ro(t, dir); writeFile(t, filepath.Join(dir, "src"), "src", 0o644) },
			check: untouched},
		{name: "bind-mounted file", target: "target", body: bigBody, code: ExitNotReplaceable,
			reason: "mount point", run: inNamespace(bindSetup),
			prep: func(t *testing.T, dir string) {
				writeFile(t, filepath.Join(dir, "src"), "src", 0o644)
				old("target")(t, dir)
			},
			check: func(t *testing.T, dir, p string) {
				isOld(t, p)
				requireFile(t, filepath.Join(dir, "src"), []byte("src"), 0o644)
			}},
		{name: "read-only directory", prep: ro, target: "ro/target", body: []byte("new"),
			code: ExitNotWritable, reason: "Read-only file system", run: inNamespace(roSetup), check: untouched},
		{name: "read-only parent to create", prep: ro, target: "ro/sub/target", body: bigBody,
			code: ExitNotWritable, reason: "Read-only file system", run: inNamespace(roSetup), check: absent},
		{name: "root-owned parent as nobody", prep: locked, target: "locked/target", body: bigBody,
			code: ExitNotWritable, reason: "Permission denied", run: asNobody, check: untouched},
		{name: "root-owned grandparent as nobody", prep: locked, target: "locked/sub/target", body: []byte("x"),
			code: ExitNotWritable, reason: "Permission denied", run: asNobody, check: absent},
		{name: "full disk", target: "small/target", body: bigBody, code: ExitNotWritable,
			reason: "No space left on device", run: inNamespace(tmpfsSetup), check: absent,
			prep: func(t *testing.T, dir string) { require.NoError(t, os.Mkdir(filepath.Join(dir, "small"), 0o755)) }},
		{name: "short body", prep: old("target"), target: "target", body: []byte("abc"), size: size(5),
			code: ExitSizeMismatch, reason: "short body: 3 of 5 bytes", check: untouched},
		{name: "short body, new target", target: "a/target", body: nil, size: size(1),
			code: ExitSizeMismatch, check: absent},
		{name: "long body", prep: old("target"), target: "target", body: []byte("abcdef"), size: size(5),
			code: ExitSizeMismatch, reason: "long body: more than 5 bytes", check: untouched},
		{name: "long 256 KiB body", prep: old("target"), target: "target", body: bigBody, size: size(0),
			code: ExitSizeMismatch, check: untouched},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.exec(t)
		})
	}
}

func TestWriteScriptHostileNames(t *testing.T) {
	t.Parallel()
	names := []string{
		"sp ace", "new\nline", "trailing newline\n", "-leading-dash", "--", "$(touch pwned)", "`touch pwned`",
		`quo"te's`, `back\slash`, "*", "?glob[a]", "tab\there", "$HOME", "-d ir/$(touch pwned)/-f",
	}
	for _, name := range names {
		t.Run(strconv.Quote(name), func(t *testing.T) {
			t.Parallel()
			body := []byte("data for " + name)
			writeCase{target: name, body: body, check: func(t *testing.T, dir, p string) {
				requireFile(t, p, body, 0o644)
				entries, err := os.ReadDir(filepath.Dir(p))
				require.NoError(t, err)
				require.Len(t, entries, 1, "exactly the target, nothing else")
				isAbsent(t, filepath.Join(dir, "pwned"))
			}}.exec(t)
		})
	}
}

// stagedReader yields body, calling hook once before the first byte past
// at is handed out.
type stagedReader struct {
	body []byte
	at   int
	hook func()
	once sync.Once
	off  int
}

func (r *stagedReader) Read(p []byte) (int, error) {
	if r.off >= len(r.body) {
		return 0, io.EOF
	}
	if r.off >= r.at {
		r.once.Do(r.hook)
	}
	end := min(len(r.body), r.off+len(p))
	if r.off < r.at {
		end = min(end, r.at)
	}
	n := copy(p, r.body[r.off:end])
	r.off += n
	return n, nil
}

// A directory that appears at the target while the body travels is refused,
// not replaced. The hook fires once the feeder has pushed 192 KiB into a
// 64 KiB pipe, so the script is past its first checks and copying.
func TestWriteScriptDirectoryAppearsDuringWrite(t *testing.T) {
	t.Parallel()
	dir := sharedTempDir(t)
	target := filepath.Join(dir, "target")
	argv, err := WriteArgs(target, int64(len(bigBody)))
	require.NoError(t, err)
	hook := func() { writeFile(t, filepath.Join(target, "inner"), "old", 0o640) }
	res := shellRun{stdin: &stagedReader{body: bigBody, at: 192 << 10, hook: hook}}.run(t, argv[2], argv[4:]...)
	require.NoError(t, res.fedErr)
	requireFault(t, res, ExitIsDirectory, "-")
	isOld(t, filepath.Join(target, "inner"))
	requireNoResidue(t, dir)
	require.ErrorIs(t, ClassifyWrite(target, res.code, res.stderr), ErrIsDirectory)
}
