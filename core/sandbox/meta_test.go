package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/sandbox/shell"
)

func TestMetaArgs(t *testing.T) {
	t.Parallel()
	must := func(argv []string, err error) []string {
		require.NoError(t, err)
		return argv
	}
	prefix := []string{"/bin/bash", "-c", shell.Meta, scriptName}
	require.Equal(t, append(prefix, "stat", "/"), must(StatArgs("/")))
	require.Equal(t, append(prefix, "list", "/-a b"), must(ListArgs("/-a b")))
	require.Equal(t, append(prefix, "remove", "/x", "1"), must(RemoveArgs("/x", true)))
	require.Equal(t, append(prefix, "mkdir", "/x", "0"), must(MkdirArgs("/x", false)))

	for _, p := range []string{"", "a", "/a/", "/a/../b", "/a\x00"} {
		_, err := StatArgs(p)
		require.Error(t, err, "%q", p)
		_, err = ListArgs(p)
		require.Error(t, err, "%q", p)
		_, err = MkdirArgs(p, true)
		require.Error(t, err, "%q", p)
		_, err = RemoveArgs(p, true)
		require.Error(t, err, "%q", p)
	}
	_, err := RemoveArgs("/", true)
	require.ErrorContains(t, err, "refusing to remove the root")
	require.NotErrorIs(t, err, ErrIsDirectory, "invalid, whatever the flag")
}

func TestParseRecords(t *testing.T) {
	t.Parallel()
	rec := func(fields ...string) string { return strings.Join(fields, "\x00") + "\x00" }
	out := rec("l", "3", "0777", "1700000000.1234567890", "x\ny", "b\nz") +
		rec("f", "0", "04755", "1700000001", "", "a") + rec("d", "4096", "01777", "-1.5000000000", "", "c") +
		rec("p", "0", "0644", "1700000000.0", "", "d")
	infos, err := ParseList("/d", 0, "", []byte(out), false)
	require.NoError(t, err)
	require.Equal(t, []FileInfo{
		{Name: "a", Type: TypeFile, Size: 0, Mode: 0o4755, ModTime: time.Unix(1700000001, 0).UTC()},
		{Name: "b\nz", Type: TypeSymlink, Size: 3, Mode: 0o777, ModTime: time.Unix(1700000000, 123456789).UTC(), LinkTarget: "x\ny"},
		{Name: "c", Type: TypeDir, Size: 4096, Mode: 0o1777, ModTime: time.Unix(-1, -500000000).UTC()},
		{Name: "d", Type: TypeOther, Mode: 0o644, ModTime: time.Unix(1700000000, 0).UTC()},
	}, infos, "sorted by name, a newline in a name or target is data")

	empty, err := ParseList("/d", 0, "", nil, false)
	require.NoError(t, err)
	require.Empty(t, empty)

	for name, bad := range map[string]string{
		"no final NUL":   strings.TrimSuffix(rec("f", "0", "0644", "1", "", "a"), "\x00"),
		"short record":   rec("f", "0", "0644", "1", "a"),
		"negative size":  rec("f", "-1", "0644", "1", "", "a"),
		"mode not octal": rec("f", "0", "0999", "1", "", "a"),
		"mode too wide":  rec("f", "0", "017777", "1", "", "a"),
		"mtime":          rec("f", "0", "0644", "x", "", "a"),
		"mtime fraction": rec("f", "0", "0644", "1.-5", "", "a"),
		"empty name":     rec("f", "0", "0644", "1", "", ""),
		"name with /":    rec("f", "0", "0644", "1", "", "a/b"),
	} {
		_, err := ParseList("/d", 0, "", []byte(bad), false)
		require.Error(t, err, name)
	}
	_, err = ParseList("/d", 0, "", nil, true)
	require.ErrorIs(t, err, ErrTooManyEntries)
	require.ErrorIs(t, err, ErrFileTooLarge)
	_, err = ParseList("/d", ExitNotDirectory, "sandgate-fault:82:-:Not a directory\n", nil, false)
	require.ErrorIs(t, err, ErrNotDirectory)

	fi, err := ParseStat("/d/x", 0, "", []byte(rec("f", "5", "0600", "1", "", "x")))
	require.NoError(t, err)
	require.Equal(t, "/d/x", fi.Name, "stat names the path asked for")
	_, err = ParseStat("/d/x", 0, "", []byte(rec("f", "5", "0600", "1", "", "x")+rec("f", "5", "0600", "1", "", "x")))
	require.ErrorContains(t, err, "2 records")
	_, err = ParseStat("/d/x", ExitFileNotExist, "", nil)
	require.ErrorIs(t, err, ErrFileNotExist)
}

func TestSortListBound(t *testing.T) {
	t.Parallel()
	_, err := SortList("/d", make([]FileInfo, MaxListEntries+1))
	require.ErrorIs(t, err, ErrTooManyEntries)
	infos, err := SortList("/d", make([]FileInfo, MaxListEntries))
	require.NoError(t, err)
	require.Len(t, infos, MaxListEntries)
}

// metaFixture is a tree the meta script runs against with the host's bash.
func metaFixture(t *testing.T) string {
	t.Helper()
	d := sharedTempDir(t)
	require.NoError(t, os.WriteFile(filepath.Join(d, "file"), []byte("hello"), 0o640))
	require.NoError(t, os.Mkdir(filepath.Join(d, "dir"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(d, "dir", "in"), nil, 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(d, "empty"), 0o700))
	require.NoError(t, os.Symlink("dir", filepath.Join(d, "link-dir")))
	require.NoError(t, os.Symlink("/no/such\nthing", filepath.Join(d, "dangling")))
	require.NoError(t, os.WriteFile(filepath.Join(d, "new\nline"), nil, 0o644))
	require.NoError(t, syscall.Mkfifo(filepath.Join(d, "fifo"), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(d, "locked"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(d, "locked", "x"), nil, 0o644))
	return d
}

// meta runs the meta script like an adapter and parses it like one.
func meta(t *testing.T, run shellRun, op, p string, flag ...string) shellResult {
	t.Helper()
	return run.run(t, shell.Meta, append([]string{op, p}, flag...)...)
}

func TestMetaScriptStatAndList(t *testing.T) {
	t.Parallel()
	d := metaFixture(t)
	stat := func(p string) (FileInfo, error) {
		res := meta(t, shellRun{}, "stat", p)
		return ParseStat(p, res.code, res.stderr, []byte(res.stdout))
	}
	fi, err := stat(d + "/file")
	require.NoError(t, err)
	require.Equal(t, FileInfo{Name: d + "/file", Type: TypeFile, Size: 5, Mode: 0o640, ModTime: fi.ModTime}, fi)
	require.WithinDuration(t, time.Now(), fi.ModTime, time.Minute)
	fi, err = stat(d + "/dangling")
	require.NoError(t, err)
	require.Equal(t, TypeSymlink, fi.Type, "never followed")
	require.Equal(t, "/no/such\nthing", fi.LinkTarget)
	fi, err = stat("/")
	require.NoError(t, err)
	require.Equal(t, TypeDir, fi.Type)
	_, err = stat(d + "/missing")
	require.ErrorIs(t, err, ErrFileNotExist)
	_, err = stat(d + "/file/x")
	require.ErrorIs(t, err, ErrNotDirectory)

	list := func(run shellRun, p string) ([]FileInfo, error) {
		res := meta(t, run, "list", p)
		return ParseList(p, res.code, res.stderr, []byte(res.stdout), false)
	}
	infos, err := list(shellRun{nobody: true}, d)
	require.NoError(t, err)
	var names []string
	for _, fi := range infos {
		names = append(names, fi.Name)
	}
	require.Equal(t, []string{"dangling", "dir", "empty", "fifo", "file", "link-dir", "locked", "new\nline"}, names)
	require.Equal(t, TypeOther, infos[3].Type)
	require.Equal(t, TypeSymlink, infos[5].Type, "entries are lstat'ed")
	infos, err = list(shellRun{}, d+"/link-dir")
	require.NoError(t, err)
	require.Len(t, infos, 1, "a symlink to a directory lists it")
	_, err = list(shellRun{}, d+"/file")
	require.ErrorIs(t, err, ErrNotDirectory)
	_, err = list(shellRun{}, d+"/missing")
	require.ErrorIs(t, err, ErrFileNotExist)

	nobody := shellRun{nobody: true}
	_, err = list(nobody, d+"/locked")
	require.ErrorIs(t, err, ErrNotReadable)
	res := meta(t, nobody, "stat", d+"/locked/x")
	_, err = ParseStat(d+"/locked/x", res.code, res.stderr, []byte(res.stdout))
	require.ErrorIs(t, err, ErrNotReadable, "an ancestor it cannot search")
}

func TestMetaScriptRemoveAndMkdir(t *testing.T) {
	t.Parallel()
	d := metaFixture(t)
	do := func(op, p, flag string) error {
		res := meta(t, shellRun{umask: "077"}, op, p, flag)
		return ClassifyMeta(p, res.code, res.stderr)
	}
	require.NoError(t, do("remove", d+"/link-dir", "0"))
	require.DirExists(t, d+"/dir", "a symlink is removed, never what it names")
	require.ErrorIs(t, do("remove", d+"/dir", "0"), ErrIsDirectory)
	require.NoError(t, do("remove", d+"/dir", "1"))
	require.NoDirExists(t, d+"/dir")
	require.NoError(t, do("remove", d+"/empty", "0"))
	require.NoError(t, do("remove", d+"/new\nline", "0"))
	require.ErrorIs(t, do("remove", d+"/missing", "0"), ErrFileNotExist)
	require.ErrorIs(t, do("remove", d+"/file/x", "0"), ErrNotDirectory)

	require.NoError(t, do("mkdir", d+"/m", "0"))
	st, err := os.Stat(d + "/m")
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o755), st.Mode().Perm(), "0755 whatever the umask")
	require.ErrorIs(t, do("mkdir", d+"/m", "0"), ErrIsDirectory)
	require.NoError(t, do("mkdir", d+"/m", "1"))
	require.ErrorIs(t, do("mkdir", d+"/a/b", "0"), ErrFileNotExist)
	require.NoError(t, do("mkdir", d+"/a/b", "1"))
	require.DirExists(t, d+"/a/b")
	require.ErrorIs(t, do("mkdir", d+"/file", "1"), ErrNotDirectory)
	require.ErrorIs(t, do("mkdir", d+"/file/x", "1"), ErrNotDirectory)
	require.ErrorIs(t, do("mkdir", d+"/dangling", "1"), ErrNotDirectory)

	res := meta(t, shellRun{nobody: true}, "remove", d+"/file", "0")
	var nw *PathNotWritableError
	require.ErrorAs(t, ClassifyMeta(d+"/file", res.code, res.stderr), &nw)
	require.Equal(t, "Permission denied", nw.Reason)
}

// Where find has no -printf (busybox), the script answers the same records
// from bash's tests, stat and readlink, with whole-second times.
func TestMetaScriptWithoutGNUFind(t *testing.T) {
	t.Parallel()
	d := metaFixture(t)
	bin := t.TempDir()
	fake := "#!/bin/sh\nfor a; do [ \"$a\" = -printf ] && { echo 'find: unrecognized: -printf' >&2; exit 1; }; done\nexec /usr/bin/find \"$@\"\n"
	require.NoError(t, os.WriteFile(filepath.Join(bin, "find"), []byte(fake), 0o755))
	busybox := shellRun{env: []string{"PATH=" + bin + ":/usr/bin:/bin"}}
	require.Equal(t, filepath.Join(bin, "find")+"\n", busybox.run(t, "command -v find").stdout, "the fake is the find")

	list := func(run shellRun, p string) []FileInfo {
		res := meta(t, run, "list", p)
		infos, err := ParseList(p, res.code, res.stderr, []byte(res.stdout), false)
		require.NoError(t, err, res.stderr)
		for i := range infos {
			infos[i].ModTime = infos[i].ModTime.Truncate(time.Second)
		}
		return infos
	}
	want := list(shellRun{}, d)
	require.Len(t, want, 8)
	require.Equal(t, want, list(busybox, d))
	require.Equal(t, list(shellRun{}, d+"/link-dir"), list(busybox, d+"/link-dir"))

	for _, p := range []string{"/", d + "/dangling", d + "/fifo", d + "/file"} {
		gnu := meta(t, shellRun{}, "stat", p)
		bb := meta(t, busybox, "stat", p)
		want, err := ParseStat(p, gnu.code, gnu.stderr, []byte(gnu.stdout))
		require.NoError(t, err)
		got, err := ParseStat(p, bb.code, bb.stderr, []byte(bb.stdout))
		require.NoError(t, err, bb.stderr)
		want.ModTime = want.ModTime.Truncate(time.Second)
		require.Equal(t, want, got, p)
	}
	res := meta(t, busybox, "stat", d+"/missing")
	_, err := ParseStat(d+"/missing", res.code, res.stderr, []byte(res.stdout))
	require.ErrorIs(t, err, ErrFileNotExist)
}
