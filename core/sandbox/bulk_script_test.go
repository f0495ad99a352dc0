package sandbox

import (
	"bytes"
	"cmp"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/sandbox/shell"
)

// The bulk scripts run by the host's bash against real files, the way each
// backend runs them. Member paths are absolute paths inside t.TempDir(), so
// the archive extracts at "/" as it does in a sandbox.

// bulkRun says how a batch's scripts run: sh for every script, rename (when
// set) for Docker's rename step alone, between, run after the PUT and before
// the rename, and the engine (forFlows sets it).
type bulkRun struct {
	sh      shellRun
	rename  *shellRun
	between func(t *testing.T, b *BulkWrite)
	engine  bulkEngine
}

// bulkEngine is how bulk.sh does its per-member work: with perl, as in a
// Debian image, or with bash alone, for an image without perl (a PATH that
// holds every tool the scripts use but perl).
type bulkEngine struct {
	name string
	env  []string
}

// bulkEngines returns both engines.
func bulkEngines(t *testing.T) []bulkEngine {
	t.Helper()
	return []bulkEngine{{name: "perl"}, {name: "bash", env: []string{"PATH=" + perlFreeBin(t)}}}
}

// perlFreeBin is a directory holding every tool the bulk scripts and the
// tests' wrappers use, but perl, to be the whole PATH.
func perlFreeBin(t *testing.T) string {
	t.Helper()
	bin := sharedTempDir(t)
	for _, tool := range []string{"head", "tar", "mkdir", "mv", "rm", "chmod", "stat", "mount", "setpriv"} {
		p, err := exec.LookPath(tool)
		require.NoError(t, err)
		require.NoError(t, os.Symlink(p, filepath.Join(bin, tool)))
	}
	return bin
}

// with returns sh running under the engine.
func (e bulkEngine) with(sh shellRun) shellRun {
	sh.env = append(slices.Clone(sh.env), e.env...)
	return sh
}

// runArgv runs one of the plan's commands with stdin.
func runArgv(t *testing.T, sh shellRun, argv []string, stdin []byte) shellResult {
	t.Helper()
	require.Equal(t, []string{"/bin/bash", "-c"}, argv[:2])
	require.Equal(t, scriptName, argv[3])
	sh.stdin = bytes.NewReader(stdin)
	return sh.run(t, argv[2], argv[4:]...)
}

// archiveBytes renders one of the plan's archive writers.
func archiveBytes(t *testing.T, write func(w *bytes.Buffer) error) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, write(&buf))
	return buf.Bytes()
}

// putArchive extracts data at dir as root, as the Docker daemon does for an
// archive PUT. It reports whether tar succeeded.
func putArchive(t *testing.T, dir string, data []byte) bool {
	t.Helper()
	cmd := exec.Command("tar", "-x", "-C", dir, "-f", "-")
	cmd.Stdin = bytes.NewReader(data)
	out, err := cmd.CombinedOutput()
	t.Logf("put: %v %s", err, out)
	return err == nil
}

// dockerFlow is Docker's WriteFiles: prepare exec, archive PUT, rename exec
// (or, if the PUT failed, the discard exec).
func dockerFlow(t *testing.T, b *BulkWrite, r bulkRun) shellResult {
	t.Helper()
	sh := r.engine.with(r.sh)
	res := runArgv(t, sh, b.PrepareCmd(), archiveBytes(t, func(w *bytes.Buffer) error { return b.WritePrefix(w) }))
	if res.code != 0 {
		return res
	}
	ok := true // the adapter's flow: one PUT per upload group, stopping at the first failure
	for _, up := range b.Uploads(nil) {
		ok = ok && putArchive(t, up.Dir, archiveBytes(t, func(w *bytes.Buffer) error { return b.WriteUpload(w, up) }))
	}
	if r.between != nil {
		r.between(t, b)
	}
	if !ok {
		return runArgv(t, sh, b.DiscardCmd(), nil)
	}
	if r.rename != nil {
		sh = r.engine.with(*r.rename)
	}
	return runArgv(t, sh, b.RenameCmd(), nil)
}

// oneShotFlow is Kubernetes' WriteFiles: one exec with the archive on stdin.
func oneShotFlow(t *testing.T, b *BulkWrite, r bulkRun) shellResult {
	t.Helper()
	return runArgv(t, r.engine.with(r.sh), b.OneShotCmd(), archiveBytes(t, func(w *bytes.Buffer) error { return b.WriteArchive(w) }))
}

// bulkRunner runs a batch the way one backend does, with one engine.
type bulkRunner func(t *testing.T, b *BulkWrite, r bulkRun) shellResult

// forFlows runs body as a parallel subtest per backend flow (all of them, or
// those named in only) and engine; run is that flow under that engine.
func forFlows(t *testing.T, only []string, body func(t *testing.T, run bulkRunner)) {
	t.Helper()
	engines := bulkEngines(t)
	for _, flow := range bulkFlows {
		if only != nil && !slices.Contains(only, flow.name) {
			continue
		}
		for _, e := range engines {
			t.Run(flow.name+"/"+e.name, func(t *testing.T) {
				t.Parallel()
				body(t, func(t *testing.T, b *BulkWrite, r bulkRun) shellResult {
					t.Helper()
					r.engine = e
					return flow.run(t, b, r)
				})
			})
		}
	}
}

var bulkFlows = []struct {
	name string
	run  bulkRunner
}{
	{"docker", dockerFlow},
	{"oneshot", oneShotFlow},
}

// bulkCase is a fresh tree under a shared temp dir with a workdir in it.
func bulkCase(t *testing.T, names ...string) (root, workdir string) {
	t.Helper()
	root = sharedTempDir(t)
	workdir = filepath.Join(root, "wd")
	mkTree(t, root, append([]string{"wd/"}, names...)...)
	return root, workdir
}

func planIn(t *testing.T, workdir string, files ...FileWrite) *BulkWrite {
	t.Helper()
	b, err := PlanBulk(workdir, files)
	require.NoError(t, err)
	return b
}

func TestBulkScriptsLand(t *testing.T) {
	t.Parallel()
	bin := make([]byte, 1024)
	for i := range bin {
		bin[i] = byte(i * 7)
	}
	forFlows(t, nil, func(t *testing.T, run bulkRunner) {
		root, wd := bulkCase(t, "exist/script.sh", "exist/plain", "pointee", "top/")
		require.NoError(t, os.Chmod(filepath.Join(root, "exist/script.sh"), 0o755))
		require.NoError(t, os.Chmod(filepath.Join(root, "exist/plain"), 0o600))
		require.NoError(t, os.Symlink(filepath.Join(root, "pointee"), filepath.Join(root, "top/link")))
		p := func(n string) string { return filepath.Join(root, n) }
		files := []FileWrite{
			{Path: p("new/a/b/deep.txt"), Data: []byte("deep")},
			{Path: p("top/bin.dat"), Data: bin},
			{Path: p("exist/script.sh"), Data: []byte("#!/bin/sh\necho new\n")},
			{Path: p("top/dup"), Data: []byte("first")},
			{Path: p("top/empty"), Data: nil},
			{Path: p("top/dup"), Data: []byte("second, and last")},
			{Path: p("exist/plain"), Data: []byte("plain")},
			{Path: p("top/link"), Data: []byte("replaces the link")},
			{Path: p("new/a/sibling"), Data: []byte("sib")},
		}
		b := planIn(t, wd, files...)
		start := time.Now().Add(-time.Minute)
		res := run(t, b, bulkRun{sh: shellRun{setup: "umask 077"}})
		require.Equal(t, 0, res.code, res.stderr)
		require.NoError(t, b.Classify(res.code, res.stderr))
		requireFile(t, p("new/a/b/deep.txt"), []byte("deep"), 0o644)
		requireFile(t, p("new/a/sibling"), []byte("sib"), 0o644)
		requireFile(t, p("top/bin.dat"), bin, 0o644)
		requireFile(t, p("exist/script.sh"), []byte("#!/bin/sh\necho new\n"), 0o755)
		requireFile(t, p("exist/plain"), []byte("plain"), 0o600)
		requireFile(t, p("top/dup"), []byte("second, and last"), 0o644)
		requireFile(t, p("top/empty"), []byte{}, 0o644)
		requireFile(t, p("top/link"), []byte("replaces the link"), 0o644)
		requireFile(t, p("pointee"), []byte("x"), 0o644)
		for _, d := range []string{"new", "new/a", "new/a/b"} {
			st, err := os.Stat(p(d))
			require.NoError(t, err)
			require.Equal(t, os.FileMode(0o755)|os.ModeDir, st.Mode(), d)
		}
		st, err := os.Stat(p("top/bin.dat"))
		require.NoError(t, err)
		require.True(t, st.ModTime().After(start), "a landed file carries the time it landed, not the archive's epoch")
		requireNoResidue(t, root)
	})
}

func TestBulkScriptsHostileNames(t *testing.T) {
	t.Parallel()
	names := []string{
		"sp ace/file name",
		"-dash/-n",
		"quo'te/\"dq\"",
		"nl\ndir/line\nbreak",
		"$(touch pwned)/`touch pwned2`",
		"back\\slash/*",
		"bytes\xff\xfe/\x01\x7f",
		strings.Repeat("long-", 40) + "/" + strings.Repeat("n", 200),
		"sandgate-fault:82:0:x/y",
	}
	forFlows(t, nil, func(t *testing.T, run bulkRunner) {
		root, wd := bulkCase(t)
		var files []FileWrite
		for _, n := range names {
			files = append(files, FileWrite{Path: filepath.Join(root, n), Data: []byte(n)})
		}
		b := planIn(t, wd, files...)
		res := run(t, b, bulkRun{})
		require.Equal(t, 0, res.code, res.stderr)
		for _, n := range names {
			requireFile(t, filepath.Join(root, n), []byte(n), 0o644)
		}
		isAbsent(t, filepath.Join(root, "pwned"))
		isAbsent(t, "pwned")
		requireNoResidue(t, root)
	})
}

// bulkFaultCase is a batch that fails: the tree it meets, how it runs, and
// what must hold afterwards. Members are paths relative to the case's root,
// each written with its own name as data.
type bulkFaultCase struct {
	name    string
	tree    []string                        // mkTree names under root
	prep    func(t *testing.T, root string) // anything mkTree cannot make
	workdir string                          // relative to root; "wd" when empty
	members []string
	run     func(root string) bulkRun
	flows   []string // "docker", "oneshot"; both when empty
	code    int
	member  string // the marker's index, or "-"
	reason  string // what the marker's reason starts with
	names   string // the path Classify names (relative); none when empty
	landed  []string
	kept    []string // tree files that must still hold "x"
	absent  []string
	stuck   []string // directories whose residue nobody could remove
}

// roBind runs a script with dir mounted read-only.
func roBind(dir string) *shellRun {
	return &shellRun{setup: `mount --bind -- "$D" "$D" && mount -o remount,bind,ro -- "$D"`, env: []string{"D=" + dir}}
}

func chmodIn(mode os.FileMode, names ...string) func(t *testing.T, root string) {
	return func(t *testing.T, root string) {
		for _, n := range names {
			require.NoError(t, os.Chmod(filepath.Join(root, n), mode))
		}
	}
}

func symlinkIn(target, link string) func(t *testing.T, root string) {
	return func(t *testing.T, root string) {
		require.NoError(t, os.Symlink(filepath.Join(root, target), filepath.Join(root, link)))
	}
}

var bulkFaultCases = []bulkFaultCase{
	{
		name:    "directory target stops the run",
		tree:    []string{"d1/dir/keep", "d1/c"},
		members: []string{"d1/a", "d2/before", "d1/dir", "d1/c", "d2/after"},
		code:    ExitIsDirectory, member: "2", reason: "Is a directory", names: "d1/dir",
		landed: []string{"d1/a", "d2/before"}, kept: []string{"d1/dir/keep", "d1/c"}, absent: []string{"d2/after"},
	},
	{
		name:    "symlink to a directory stops the run",
		tree:    []string{"d1/dir/keep"},
		prep:    symlinkIn("d1/dir", "d1/link"),
		members: []string{"d1/a", "d1/link", "d1/c"},
		code:    ExitIsDirectory, member: "1", reason: "Is a directory", names: "d1/link",
		landed: []string{"d1/a"}, kept: []string{"d1/dir/keep"}, absent: []string{"d1/c"},
	},
	{
		name:    "blocked parent at depth 1 lands nothing",
		tree:    []string{"blk", "ok/"},
		members: []string{"ok/first", "new/dir/second", "blk/x", "ok/fourth"},
		code:    ExitNotDirectory, member: "2", reason: "Not a directory", names: "blk/x",
		kept: []string{"blk"}, absent: []string{"ok/first", "new", "ok/fourth"},
	},
	{
		name:    "blocked parent at depth 2 lands nothing",
		tree:    []string{"a/blk2", "ok/"},
		members: []string{"ok/first", "new/dir/second", "a/blk2/sub/x", "ok/fourth"},
		code:    ExitNotDirectory, member: "2", reason: "Not a directory", names: "a/blk2/sub/x",
		kept: []string{"a/blk2"}, absent: []string{"ok/first", "new"},
	},
	{
		name:    "dangling symlink in the parent chain",
		prep:    symlinkIn("nowhere", "dangling"),
		members: []string{"first", "dangling/x"},
		code:    ExitNotDirectory, member: "1", reason: "Not a directory", names: "dangling/x",
		absent: []string{"first"},
	},
	{
		name:    "workdir blocked",
		tree:    []string{"file"},
		workdir: "file/wd",
		members: []string{"x"},
		code:    ExitNotDirectory, member: "-", reason: "Not a directory",
		absent: []string{"x"},
	},
	{
		name:    "new parent on a read-only mount",
		tree:    []string{"rw/", "ro/"},
		members: []string{"rw/a", "ro/new/b", "ro/c"},
		run:     func(root string) bulkRun { return bulkRun{sh: *roBind(filepath.Join(root, "ro"))} },
		code:    ExitNotWritable, member: "1", reason: "Read-only file system", names: "ro/new/b",
		absent: []string{"rw/a", "ro/new"},
	},
	{
		name:    "existing parent on a read-only mount",
		tree:    []string{"ro/"},
		members: []string{"a", "ro/c"},
		run:     func(root string) bulkRun { return bulkRun{sh: *roBind(filepath.Join(root, "ro"))} },
		code:    ExitNotWritable, member: "1", reason: "Read-only file system", names: "ro/c",
		absent: []string{"a"},
	},
	{
		name:    "parent turned read-only before the rename",
		tree:    []string{"ro/"},
		members: []string{"first", "ro/second", "third"},
		run:     func(root string) bulkRun { return bulkRun{rename: roBind(filepath.Join(root, "ro"))} },
		flows:   []string{"docker"},
		code:    ExitNotWritable, member: "1", reason: "Read-only file system", names: "ro/second",
		landed: []string{"first"}, absent: []string{"ro/second", "third"},
		stuck: []string{"ro"}, // a read-only mount keeps its temporary file
	},
	{
		name:    "root-owned parent under a non-root user",
		tree:    []string{"locked/"},
		prep:    chmodIn(0o777, "wd"),
		members: []string{"locked/x"},
		run:     func(string) bulkRun { return bulkRun{sh: shellRun{nobody: true}} },
		code:    ExitNotWritable, member: "0", reason: "Permission denied", names: "locked/x",
		absent: []string{"locked/x"},
	},
	{
		name:    "workdir refuses the bookkeeping",
		tree:    []string{"open/"},
		prep:    chmodIn(0o777, "open"),
		members: []string{"open/x"},
		run:     func(string) bulkRun { return bulkRun{sh: shellRun{nobody: true}} },
		code:    ExitNotWritable, member: "-", reason: "Permission denied", names: "wd",
		absent: []string{"open/x"},
	},
	{
		name:    "sticky directory refuses the rename",
		tree:    []string{"sticky/theirs"},
		prep:    chmodIn(0o777|os.ModeSticky, "wd", "sticky"),
		members: []string{"sticky/mine", "sticky/theirs"},
		run:     func(string) bulkRun { return bulkRun{sh: shellRun{nobody: true}} },
		flows:   []string{"oneshot"},
		code:    ExitNotWritable, member: "1", reason: "Operation not permitted", names: "sticky/theirs",
		landed: []string{"sticky/mine"}, kept: []string{"sticky/theirs"},
	},
	{
		name:    "disk full during the extraction",
		tree:    []string{"small/"},
		members: []string{"ok", "small/f1", "small/f2", "small/f3"},
		run: func(root string) bulkRun {
			return bulkRun{sh: shellRun{setup: `mount -t tmpfs -o size=4k tmpfs "$D"`, env: []string{"D=" + filepath.Join(root, "small")}}}
		},
		flows: []string{"oneshot"},
		code:  ExitNotWritable, member: "-", reason: "No space left on device", names: "wd",
		absent: []string{"ok"},
	},
	{
		name:    "mount point target inside a run",
		tree:    []string{"m/busy", "src"},
		members: []string{"first", "m/a", "m/busy", "m/c", "last"},
		run: func(root string) bulkRun {
			return bulkRun{rename: &shellRun{setup: `mount --bind -- "$S" "$D"`,
				env: []string{"S=" + filepath.Join(root, "src"), "D=" + filepath.Join(root, "m/busy")}}}
		},
		flows: []string{"docker"},
		code:  ExitNotWritable, member: "2", reason: "Device or resource busy", names: "m/busy",
		landed: []string{"first", "m/a"}, kept: []string{"m/busy"}, absent: []string{"last"},
	},
	{
		// Docker's daemon extracts root-owned temps unless the adapter asks
		// for the container user's ownership: a non-root user then cannot
		// carry a mode over, and the batch stops at the first member whose
		// mode must change (a new file's 0644 is the archive's already).
		name: "temps the user cannot chmod",
		tree: []string{"open/a"},
		prep: func(t *testing.T, root string) {
			chmodIn(0o777, "wd", "open")(t, root)
			chmodIn(0o755, "open/a")(t, root)
		},
		members: []string{"open/b", "open/a", "open/c"},
		run:     func(string) bulkRun { return bulkRun{sh: shellRun{nobody: true}} },
		flows:   []string{"docker"},
		code:    ExitNotWritable, member: "1", reason: "Operation not permitted", names: "open/a",
		landed: []string{"open/b"}, absent: []string{"open/c"},
	},
}

func TestBulkScriptsFaults(t *testing.T) {
	t.Parallel()
	for _, tc := range bulkFaultCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			forFlows(t, tc.flows, func(t *testing.T, run bulkRunner) {
				root, _ := bulkCase(t, tc.tree...)
				p := func(n string) string { return filepath.Join(root, n) }
				if tc.prep != nil {
					tc.prep(t, root)
				}
				files := make([]FileWrite, len(tc.members))
				for i, m := range tc.members {
					files[i] = FileWrite{Path: p(m), Data: []byte(m)}
				}
				b := planIn(t, p(cmp.Or(tc.workdir, "wd")), files...)
				var r bulkRun
				if tc.run != nil {
					r = tc.run(root)
				}
				res := run(t, b, r)
				f := requireFault(t, res, tc.code, tc.member)
				require.True(t, strings.HasPrefix(f.Reason, tc.reason), "reason %q", f.Reason)
				err := b.Classify(res.code, res.stderr)
				require.ErrorIs(t, err, classSentinel(tc.code))
				if tc.names != "" {
					require.True(t, strings.HasPrefix(err.Error(), p(tc.names)+": "), err.Error())
				} else {
					require.Equal(t, classSentinel(tc.code).Error(), err.Error())
				}
				for _, m := range tc.landed {
					requireFile(t, p(m), []byte(m), 0o644)
				}
				for _, n := range tc.kept {
					requireFile(t, p(n), []byte("x"), 0o644)
				}
				for _, n := range tc.absent {
					isAbsent(t, p(n))
				}
				for _, d := range tc.stuck {
					// What nobody could remove while the mount was read-only
					// goes now; nothing may be left anywhere else.
					stuck, err := filepath.Glob(filepath.Join(p(d), TempPrefix+"*"))
					require.NoError(t, err)
					require.NotEmpty(t, stuck)
					for _, x := range stuck {
						require.NoError(t, os.RemoveAll(x))
					}
				}
				requireNoResidue(t, root)
			})
		})
	}
}

func TestBulkScriptsShortDelivery(t *testing.T) {
	t.Parallel()
	for _, e := range bulkEngines(t) {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			testShortDelivery(t, e)
		})
	}
}

func testShortDelivery(t *testing.T, e bulkEngine) {
	files := func(root string) []FileWrite {
		return []FileWrite{
			{Path: filepath.Join(root, "d/a"), Data: []byte("a")},
			{Path: filepath.Join(root, "d/b"), Data: bytes.Repeat([]byte("b"), 64<<10)},
			{Path: filepath.Join(root, "e/c"), Data: []byte("c")},
		}
	}
	requireNothing := func(t *testing.T, root string) {
		t.Helper()
		for _, n := range []string{"d/a", "d/b", "e/c"} {
			isAbsent(t, filepath.Join(root, n))
		}
		requireNoResidue(t, root)
	}
	t.Run("temp missing before the rename", func(t *testing.T) {
		t.Parallel()
		root, wd := bulkCase(t)
		b := planIn(t, wd, files(root)...)
		res := dockerFlow(t, b, bulkRun{engine: e, between: func(t *testing.T, b *BulkWrite) {
			require.NoError(t, os.Remove(b.members[2].temp))
		}})
		f := requireFault(t, res, ExitShortDelivery, "2")
		require.Equal(t, "temporary file missing", f.Reason)
		require.ErrorIs(t, b.Classify(res.code, res.stderr), ErrShortDelivery)
		requireNothing(t, root)
	})
	t.Run("PUT broke half way", func(t *testing.T) {
		t.Parallel()
		root, wd := bulkCase(t)
		b := planIn(t, wd, files(root)...)
		require.Equal(t, 0, runArgv(t, e.with(shellRun{}), b.PrepareCmd(), archiveBytes(t, func(w *bytes.Buffer) error { return b.WritePrefix(w) })).code)
		members := archiveBytes(t, func(w *bytes.Buffer) error { return b.WriteMembers(w) })
		require.False(t, putArchive(t, "/", members[:len(members)/2]))
		res := runArgv(t, e.with(shellRun{}), b.DiscardCmd(), nil)
		requireFault(t, res, ExitShortDelivery, "-")
		require.ErrorIs(t, b.Classify(res.code, res.stderr), ErrShortDelivery)
		requireNothing(t, root)
	})
	t.Run("oneshot stream cut", func(t *testing.T) {
		t.Parallel()
		root, wd := bulkCase(t)
		b := planIn(t, wd, files(root)...)
		archive := archiveBytes(t, func(w *bytes.Buffer) error { return b.WriteArchive(w) })
		res := runArgv(t, e.with(shellRun{}), b.OneShotCmd(), archive[:int(b.PrefixLen())+(len(archive)-int(b.PrefixLen()))/2])
		f := requireFault(t, res, ExitShortDelivery, "-")
		require.Contains(t, f.Reason, "archive extraction failed")
		requireNothing(t, root)
	})
	t.Run("oneshot bookkeeping cut", func(t *testing.T) {
		t.Parallel()
		root, wd := bulkCase(t)
		b := planIn(t, wd, files(root)...)
		archive := archiveBytes(t, func(w *bytes.Buffer) error { return b.WriteArchive(w) })
		for _, n := range []int{0, 700, int(b.PrefixLen()) - 512} {
			res := runArgv(t, e.with(shellRun{}), b.OneShotCmd(), archive[:n])
			requireFault(t, res, ExitShortDelivery, "-")
			requireNothing(t, root)
		}
	})
	t.Run("discard without bookkeeping", func(t *testing.T) {
		t.Parallel()
		root, wd := bulkCase(t)
		b := planIn(t, wd, files(root)...)
		res := runArgv(t, e.with(shellRun{}), b.DiscardCmd(), nil)
		requireFault(t, res, ExitShortDelivery, "-")
		requireNothing(t, root)
	})
}

func TestBulkScriptsDiscardFindsBlockedParent(t *testing.T) {
	t.Parallel()
	for _, e := range bulkEngines(t) {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			testDiscardFindsBlockedParent(t, e)
		})
	}
}

func testDiscardFindsBlockedParent(t *testing.T, e bulkEngine) {
	root, wd := bulkCase(t, "ok/")
	p := func(n string) string { return filepath.Join(root, n) }
	b := planIn(t, wd,
		FileWrite{Path: p("ok/a"), Data: []byte("a")},
		FileWrite{Path: p("late/q/b"), Data: []byte("b")},
	)
	require.Equal(t, 0, runArgv(t, e.with(shellRun{}), b.PrepareCmd(), archiveBytes(t, func(w *bytes.Buffer) error { return b.WritePrefix(w) })).code)
	// Something in the sandbox replaces a prepared directory by a file
	// before the PUT, which then fails on it.
	require.NoError(t, os.RemoveAll(p("late/q")))
	require.NoError(t, os.WriteFile(p("late/q"), []byte("blocker"), 0o644))
	require.False(t, putArchive(t, "/", archiveBytes(t, func(w *bytes.Buffer) error { return b.WriteMembers(w) })))
	res := runArgv(t, e.with(shellRun{}), b.DiscardCmd(), nil)
	requireFault(t, res, ExitNotDirectory, "1")
	err := b.Classify(res.code, res.stderr)
	require.ErrorIs(t, err, ErrNotDirectory)
	require.ErrorContains(t, err, p("late/q/b"))
	isAbsent(t, p("ok/a"))
	requireFile(t, p("late/q"), []byte("blocker"), 0o644)
	requireNoResidue(t, root)

	// Without a manifest the dir list still finds the blocker, naming no
	// member.
	b2 := planIn(t, wd, FileWrite{Path: p("late/q/c")})
	require.NoError(t, os.WriteFile(b2.DirList, b2.dirList, 0o644))
	res = runArgv(t, e.with(shellRun{}), b2.DiscardCmd(), nil)
	requireFault(t, res, ExitNotDirectory, "-")
	requireNoResidue(t, root)
}

func TestBulkScriptsDistrustTheirInputs(t *testing.T) {
	t.Parallel()
	for _, e := range bulkEngines(t) {
		t.Run("tampered manifest/"+e.name, func(t *testing.T) {
			t.Parallel()
			testTamperedManifest(t, e)
		})
	}
	t.Run("bad arguments", func(t *testing.T) {
		t.Parallel()
		res := shellRun{}.run(t, shell.BulkRename, "/m", "/d", "1; touch /tmp/x", "0", "0")
		require.Equal(t, 2, res.code)
		require.Contains(t, res.stderr, "bad arguments")
	})
}

func testTamperedManifest(t *testing.T, e bulkEngine) {
	root, wd := bulkCase(t, "victim/keep")
	b := planIn(t, wd, FileWrite{Path: filepath.Join(root, "a"), Data: []byte("a")})
	require.Equal(t, 0, runArgv(t, e.with(shellRun{}), b.PrepareCmd(), archiveBytes(t, func(w *bytes.Buffer) error { return b.WritePrefix(w) })).code)
	require.True(t, putArchive(t, "/", archiveBytes(t, func(w *bytes.Buffer) error { return b.WriteMembers(w) })))
	victim := filepath.Join(root, "victim")
	require.NoError(t, os.WriteFile(b.Manifest, []byte(victim+"/keep\x00"+root+"/keep\x00"), 0o644))
	res := runArgv(t, e.with(shellRun{}), b.RenameCmd(), nil)
	f := requireFault(t, res, ExitShortDelivery, "-")
	require.Equal(t, "bulk manifest missing or malformed", f.Reason)
	requireFile(t, filepath.Join(victim, "keep"), []byte("x"), 0o644)
	isAbsent(t, filepath.Join(root, "a"))
	isAbsent(t, b.Manifest)
}

func TestBulkScriptsBrokenPerl(t *testing.T) {
	t.Parallel()
	// A perl that cannot run the program (here: one that always fails)
	// leaves every step to bash.
	bin := perlFreeBin(t)
	require.NoError(t, os.WriteFile(filepath.Join(bin, "perl"), []byte("#!/bin/sh\nexit 99\n"), 0o755))
	e := bulkEngine{name: "broken perl", env: []string{"PATH=" + bin}}
	for _, flow := range bulkFlows {
		t.Run(flow.name, func(t *testing.T) {
			t.Parallel()
			root, wd := bulkCase(t, "d/dir/")
			p := func(n string) string { return filepath.Join(root, n) }
			b := planIn(t, wd,
				FileWrite{Path: p("d/new/a"), Data: []byte("a")},
				FileWrite{Path: p("d/dir"), Data: []byte("never")},
				FileWrite{Path: p("d/c"), Data: []byte("never")},
			)
			res := flow.run(t, b, bulkRun{engine: e})
			requireFault(t, res, ExitIsDirectory, "1")
			requireFile(t, p("d/new/a"), []byte("a"), 0o644)
			isAbsent(t, p("d/c"))
			requireNoResidue(t, root)
		})
	}
}

func TestBulkPrepareDistrustsItsInputs(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		tamper func(b *BulkWrite, argv []string)
		code   int
		reason string
	}{
		{"dir count", func(_ *BulkWrite, argv []string) { argv[7] = "2" }, ExitShortDelivery, "bulk manifest missing or malformed"},
		{"relative dir", func(b *BulkWrite, _ []string) { b.dirList[0] = 'x' }, ExitShortDelivery, "bulk manifest missing or malformed"},
		{
			// A blocked directory that no member of the manifest names still
			// refuses the batch, naming no member.
			"blocker named by no member",
			func(b *BulkWrite, _ []string) { copy(b.manifest, bytes.Repeat([]byte("x"), len(b.manifest))) },
			ExitNotDirectory, "Not a directory",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root, wd := bulkCase(t, "blk")
			b := planIn(t, wd, FileWrite{Path: filepath.Join(root, "blk/new/x"), Data: []byte("x")})
			argv := b.PrepareCmd()
			tc.tamper(b, argv)
			res := runArgv(t, shellRun{}, argv, archiveBytes(t, func(w *bytes.Buffer) error { return b.WritePrefix(w) }))
			f := requireFault(t, res, tc.code, "-")
			require.Equal(t, tc.reason, f.Reason)
			requireFile(t, filepath.Join(root, "blk"), []byte("x"), 0o644)
			isAbsent(t, b.Manifest)
			isAbsent(t, b.DirList)
			requireNoResidue(t, root)
		})
	}
}
