package sandbox

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/sandbox/shell"
)

// goldenNonce is the nonce of every golden plan.
const goldenNonce = 0x0123456789abcdef

// goldenFiles is the batch the golden files are made from: nested and
// hostile names, binary and empty data, a duplicate, members alternating
// between directories, and a name too long for a plain tar header.
func goldenFiles() []FileWrite {
	bin := make([]byte, 256)
	for i := range bin {
		bin[i] = byte(i)
	}
	return []FileWrite{
		{Path: "/workspace/skill/SKILL.md", Data: []byte("# skill\n")},
		{Path: "/workspace/skill/bin/run.sh", Data: []byte("#!/bin/sh\necho hi\n")},
		{Path: "/workspace/skill/bin/data.bin", Data: bin},
		{Path: "/workspace/skill/empty", Data: nil},
		{Path: "/workspace/skill/dup", Data: []byte("first")},
		{Path: "/workspace/skill/dup", Data: []byte("second")},
		{Path: "/workspace/sp ace/-dash/'q\"$(x)\n\xff", Data: []byte("hostile")},
		{Path: "/workspace/" + strings.Repeat("long-", 30) + "/name", Data: []byte("long")},
		{Path: "/top", Data: []byte("at the root")},
	}
}

func goldenPlan(t *testing.T) *BulkWrite {
	t.Helper()
	b, err := planBulk("", goldenFiles(), goldenNonce)
	require.NoError(t, err)
	return b
}

// TestBulkGolden pins the plan's bookkeeping and archive; the argv of its
// scripts is pinned by TestArgvGolden.
func TestBulkGolden(t *testing.T) {
	t.Parallel()
	b := goldenPlan(t)
	var archive bytes.Buffer
	require.NoError(t, b.WriteArchive(&archive))
	requireGolden(t, "bulk/manifest", b.manifest)
	requireGolden(t, "bulk/dirlist", b.dirList)
	requireGolden(t, "bulk/archive.tar", archive.Bytes())
}

func TestPlanBulkLayout(t *testing.T) {
	t.Parallel()
	b := goldenPlan(t)
	require.Equal(t, "/workspace/.sandgate-write-0123456789abcdef.manifest", b.Manifest)
	require.Equal(t, "/workspace/.sandgate-write-0123456789abcdef.dirs", b.DirList)
	require.Equal(t, 9, b.Len())
	files := goldenFiles()
	paths := b.Paths()
	for i, f := range files {
		require.Equal(t, f.Path, paths[i])
	}
	temp := func(dir string, i uint64) string {
		return fmt.Sprintf("%s/.sandgate-write-%016x", dir, goldenNonce+i)
	}
	wantTemps := []string{
		temp("/workspace/skill", 0),
		temp("/workspace/skill/bin", 1),
		temp("/workspace/skill/bin", 2),
		temp("/workspace/skill", 3),
		temp("/workspace/skill", 4),
		temp("/workspace/skill", 5), // a duplicate has its own
		temp("/workspace/sp ace/-dash", 6),
		temp("/workspace/"+strings.Repeat("long-", 30), 7),
		temp("", 8),
	}
	var wantManifest []byte
	for i, m := range b.members {
		require.Equal(t, wantTemps[i], m.temp, "member %d", i)
		wantManifest = append(wantManifest, m.temp+"\x00"+m.target+"\x00"...)
	}
	require.Equal(t, wantManifest, b.manifest)
	require.Equal(t, "/\x00/workspace/"+strings.Repeat("long-", 30)+"\x00/workspace/skill\x00/workspace/skill/bin\x00/workspace/sp ace/-dash\x00",
		string(b.dirList))
	require.Equal(t, []string{"/bin/bash", "-c", shell.BulkRename, scriptName, b.Manifest, b.DirList, "9", "5",
		fmt.Sprint(b.PrefixLen())}, b.RenameCmd())
}

func TestPlanBulkEmpty(t *testing.T) {
	t.Parallel()
	for _, files := range [][]FileWrite{nil, {}} {
		b, err := PlanBulk("/w", files)
		require.NoError(t, err)
		require.Nil(t, b)
	}
	b, err := PlanBulk("relative", nil)
	require.NoError(t, err, "an empty batch does nothing, whatever the workdir")
	require.Nil(t, b)
}

func TestPlanBulkMtime(t *testing.T) {
	t.Parallel()
	before := time.Now().Truncate(time.Second)
	b, err := PlanBulk("/w", []FileWrite{{Path: "/w/a", Data: []byte("a")}})
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, b.WriteArchive(&buf))
	hdrs, _ := readArchive(t, buf.Bytes())
	for _, h := range hdrs {
		// The plan's clock in whole seconds: a landed member carries the
		// time it was written without a utime call in the sandbox.
		require.False(t, h.ModTime.Before(before), h.Name)
		require.False(t, h.ModTime.After(time.Now()), h.Name)
		require.Zero(t, h.ModTime.Nanosecond(), h.Name)
	}
}

func TestPlanBulkWorkdirRoot(t *testing.T) {
	t.Parallel()
	b, err := planBulk("/", []FileWrite{{Path: "/a"}}, 1)
	require.NoError(t, err)
	require.Equal(t, "/.sandgate-write-0000000000000001.manifest", b.Manifest)
	require.Equal(t, "/.sandgate-write-0000000000000001.dirs", b.DirList)
}

func TestPlanBulkInvalid(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		workdir string
		paths   []string
		want    string
		is      error
	}{
		{"relative", "", []string{"/ok", "rel/x"}, `files[1]: path "rel/x": not absolute`, nil},
		{"empty path", "", []string{""}, `files[0]: path: empty`, nil},
		{"dot-dot", "", []string{"/a/../b"}, `files[0]: path "/a/../b": not clean (want "/b")`, nil},
		{"trailing slash", "", []string{"/a/"}, `files[0]: path "/a/": not clean (want "/a")`, nil},
		{"double slash", "", []string{"//a"}, `files[0]: path "//a": not clean (want "/a")`, nil},
		{"dot", "", []string{"/a/./b"}, `files[0]: path "/a/./b": not clean (want "/a/b")`, nil},
		{"root", "", []string{"/x", "/y", "/"}, `files[2]: path "/": is a directory`, ErrIsDirectory},
		{"NUL", "", []string{"/a\x00b"}, `files[0]: path "/a\x00b": contains a NUL byte`, nil},
		{"too long", "", []string{"/" + strings.Repeat("x", 4095)}, `files[0]: path: 4096 bytes, longer than 4095`, nil},
		{"workdir relative", "work", []string{"/a"}, `workdir: path "work": not absolute`, nil},
		{"workdir unclean", "/work/", []string{"/a"}, `workdir: path "/work/": not clean (want "/work")`, nil},
		{"workdir NUL", "/w\x00", []string{"/a"}, `workdir: path "/w\x00": contains a NUL byte`, nil},
		{"parent is a member, earlier", "", []string{"/w/a", "/w/a/b/c"},
			`files[1].path "/w/a/b/c": parent "/w/a" is files[0], written as a file: not a directory`, ErrNotDirectory},
		{"parent is a member, later", "", []string{"/w/a/b", "/w/a"},
			`files[0].path "/w/a/b": parent "/w/a" is files[1], written as a file: not a directory`, ErrNotDirectory},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			files := make([]FileWrite, len(tc.paths))
			for i, p := range tc.paths {
				files[i] = FileWrite{Path: p}
			}
			b, err := PlanBulk(tc.workdir, files)
			require.Nil(t, b)
			require.EqualError(t, err, tc.want)
			if tc.is != nil {
				require.ErrorIs(t, err, tc.is)
			}
		})
	}
}

func TestPlanBulkNonceCollision(t *testing.T) {
	t.Parallel()
	for _, p := range []string{
		"/w/.sandgate-write-0000000000000007",       // member 0's temporary name
		"/w/.sandgate-write-0000000000000008",       // its own
		"/w/.sandgate-write-0000000000000007/other", // below one
		"/w/.sandgate-write-0000000000000007.manifest",
		"/w/.sandgate-write-0000000000000007.dirs/x",
	} {
		_, err := planBulk("/w", []FileWrite{{Path: "/w/a"}, {Path: p}}, 7)
		require.ErrorIs(t, err, errNonceCollision, p)
		require.ErrorContains(t, err, "files[1].path")
	}
	b, err := PlanBulk("/w", []FileWrite{{Path: "/w/.sandgate-write-0000000000000007"}})
	require.NoError(t, err, "a random nonce does not collide")
	require.Equal(t, 1, b.Len())
}

// readArchive lists an archive's headers and contents.
func readArchive(t *testing.T, data []byte) ([]*tar.Header, [][]byte) {
	t.Helper()
	tr := tar.NewReader(bytes.NewReader(data))
	var hdrs []*tar.Header
	var bodies [][]byte
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return hdrs, bodies
		}
		require.NoError(t, err)
		body, err := io.ReadAll(tr)
		require.NoError(t, err)
		hdrs = append(hdrs, h)
		bodies = append(bodies, body)
	}
}

func TestBulkArchive(t *testing.T) {
	t.Parallel()
	b := goldenPlan(t)
	var whole, prefix, members bytes.Buffer
	require.NoError(t, b.WriteArchive(&whole))
	require.NoError(t, b.WritePrefix(&prefix))
	require.NoError(t, b.WriteMembers(&members))
	require.Equal(t, whole.Bytes(), append(bytes.Clone(prefix.Bytes()), members.Bytes()...), "WriteArchive = WritePrefix + WriteMembers")
	require.EqualValues(t, prefix.Len(), b.PrefixLen())
	require.Zero(t, prefix.Len()%512)

	hdrs, bodies := readArchive(t, whole.Bytes())
	files := goldenFiles()
	require.Len(t, hdrs, 2+len(files))
	require.Equal(t, strings.TrimPrefix(b.Manifest, "/"), hdrs[0].Name)
	require.Equal(t, b.manifest, bodies[0])
	require.Equal(t, strings.TrimPrefix(b.DirList, "/"), hdrs[1].Name)
	require.Equal(t, b.dirList, bodies[1])
	for i, h := range hdrs {
		require.Equal(t, byte(tar.TypeReg), h.Typeflag)
		require.EqualValues(t, 0o644, h.Mode)
		require.Zero(t, h.Uid)
		require.Zero(t, h.Gid)
		require.True(t, h.ModTime.Equal(time.Unix(0, 0)))
		require.False(t, strings.HasPrefix(h.Name, "/"))
		if i >= 2 {
			m := b.members[i-2]
			require.Equal(t, strings.TrimPrefix(m.temp, "/"), h.Name)
			require.True(t, bytes.Equal(files[i-2].Data, bodies[i]), "member %d data", i-2)
		}
	}
	_, memberBodies := readArchive(t, members.Bytes())
	require.Len(t, memberBodies, len(files), "WriteMembers is a complete archive of the members")
}

// Without writable roots, a batch is one upload at the deepest directory
// holding every temporary file.
func TestBulkUploadRoot(t *testing.T) {
	t.Parallel()
	require.Equal(t, "/", goldenPlan(t).Uploads(nil)[0].Dir)
	cases := []struct {
		paths []string
		root  string
	}{
		{[]string{"/w/a/x"}, "/w/a"},
		{[]string{"/w/a/x", "/w/a/y/z", "/w/a/y/q/r"}, "/w/a"},
		{[]string{"/w/a/x", "/w/ab/x"}, "/w"},
		{[]string{"/w/ab/x", "/w/a/x", "/w/a/b/c"}, "/w"},
		{[]string{"/x", "/w/a/x"}, "/"},
	}
	for _, tc := range cases {
		files := make([]FileWrite, len(tc.paths))
		for i, p := range tc.paths {
			files[i] = FileWrite{Path: p, Data: []byte(p)}
		}
		b, err := planBulk("/w", files, 1)
		require.NoError(t, err)
		ups := b.Uploads(nil)
		require.Len(t, ups, 1)
		require.Equal(t, tc.root, ups[0].Dir, tc.paths)
		var buf bytes.Buffer
		require.NoError(t, b.WriteUpload(&buf, ups[0]))
		hdrs, bodies := readArchive(t, buf.Bytes())
		for i, h := range hdrs {
			require.Equal(t, b.members[i].temp, path.Join(tc.root, h.Name))
			require.Equal(t, tc.paths[i], string(bodies[i]))
		}
	}
	b, err := planBulk("/w", []FileWrite{{Path: "/w/a/x"}, {Path: "/w/b/y"}}, 1)
	require.NoError(t, err)
	require.ErrorContains(t, b.WriteUpload(io.Discard, Upload{Dir: "/w/a", members: []int{0, 1}}), "is not below \"/w/a\"")
}

func TestBulkArchiveStreamsData(t *testing.T) {
	t.Parallel()
	data := []byte("original")
	b, err := planBulk("/w", []FileWrite{{Path: "/w/a", Data: data}}, 1)
	require.NoError(t, err)
	copy(data, "changed!")
	var buf bytes.Buffer
	require.NoError(t, b.WriteArchive(&buf))
	_, bodies := readArchive(t, buf.Bytes())
	require.Equal(t, []byte("changed!"), bodies[2], "the plan keeps the caller's slice, it does not copy it")
}

// budgetWriter fails a write that would take it past n bytes.
type budgetWriter struct{ n int }

func (w *budgetWriter) Write(p []byte) (int, error) {
	if len(p) > w.n {
		return 0, errors.New("broken pipe")
	}
	w.n -= len(p)
	return len(p), nil
}

func TestBulkArchiveWriteErrors(t *testing.T) {
	t.Parallel()
	big := bytes.Repeat([]byte("z"), 256<<10)
	b, err := planBulk("/w", []FileWrite{{Path: "/w/a", Data: big}, {Path: "/w/b", Data: big}}, 1)
	require.NoError(t, err)
	for _, n := range []int{0, 100 << 10, 300 << 10} {
		require.ErrorContains(t, b.WriteArchive(&budgetWriter{n: n}), "broken pipe", n)
	}
	require.ErrorContains(t, b.WritePrefix(&budgetWriter{}), "broken pipe")
	require.ErrorContains(t, b.WriteMembers(&budgetWriter{n: 400 << 10}), "broken pipe")
}

func TestBulkClassify(t *testing.T) {
	t.Parallel()
	b, err := planBulk("/w", []FileWrite{{Path: "/w/a"}, {Path: "/w/b"}, {Path: "/w/c"}}, 1)
	require.NoError(t, err)
	one, err := planBulk("/w", []FileWrite{{Path: "/w/only"}}, 1)
	require.NoError(t, err)
	cases := []struct {
		name   string
		plan   *BulkWrite
		code   int
		stderr string
		is     error
		msg    string
	}{
		{"success", b, 0, "", nil, ""},
		{"directory target", b, ExitIsDirectory, "sandgate-fault:81:1:Is a directory\n", ErrIsDirectory, "/w/b: is a directory"},
		{"blocked parent", b, ExitNotDirectory, "noise\nsandgate-fault:82:2:Not a directory\n", ErrNotDirectory, "/w/c: not a directory"},
		{"not writable", b, ExitNotWritable, "sandgate-fault:85:0:Read-only file system\n", ErrNotWritable, "/w/a: path not writable: Read-only file system"},
		{"bookkeeping not writable", b, ExitNotWritable, "sandgate-fault:85:-:Permission denied\n", ErrNotWritable, "/w: path not writable: Permission denied"},
		{"short delivery, member", b, ExitShortDelivery, "sandgate-fault:87:2:temporary file missing\n", ErrShortDelivery, "/w/c: bulk write delivery incomplete"},
		{"short delivery, no member", b, ExitShortDelivery, "sandgate-fault:87:-:x\n", ErrShortDelivery, "bulk write delivery incomplete"},
		{"index out of range", b, ExitIsDirectory, "sandgate-fault:81:3:Is a directory\n", ErrIsDirectory, "is a directory"},
		{"forged code", b, ExitIsDirectory, "sandgate-fault:82:1:x\n", ErrIsDirectory, "is a directory"},
		{"no marker", b, ExitNotDirectory, "", ErrNotDirectory, "not a directory"},
		{"lone member without marker", one, ExitNotDirectory, "", ErrNotDirectory, "not a directory"},
		{"lone member with marker", one, ExitNotDirectory, "sandgate-fault:82:0:Not a directory\n", ErrNotDirectory, "/w/only: not a directory"},
		{"outside the protocol", b, 137, "Killed", nil, "sandbox script exited 137: Killed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := tc.plan.Classify(tc.code, tc.stderr)
			if tc.msg == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, tc.msg)
			if tc.is != nil {
				require.ErrorIs(t, err, tc.is)
			}
		})
	}
}

func TestPlanBulk10k(t *testing.T) {
	t.Parallel()
	files := make([]FileWrite, 10000)
	total := 0
	for i := range files {
		data := bytes.Repeat([]byte{byte(i)}, 5+i%4092)
		total += len(data)
		files[i] = FileWrite{Path: fmt.Sprintf("/workspace/skill/d%02d/file-%05d.txt", i%100, i), Data: data}
	}
	start := time.Now()
	b, err := PlanBulk("", files)
	require.NoError(t, err)
	planned := time.Since(start)
	var c countingWriter
	require.NoError(t, b.WriteArchive(&c))
	t.Logf("10,000 members, %d data bytes: plan %v, archive %v (%d bytes)", total, planned, time.Since(start)-planned, c)
	require.Greater(t, int64(c), int64(total))
	require.Equal(t, 10000, b.Len())
	require.Len(t, b.dirs, 100)
}

func FuzzPlanBulkPaths(f *testing.F) {
	for _, s := range []string{"/a", "/a/b", "rel", "", "/", "/a/../b", "//a", "/a/", "/a\x00b", "/.sandgate-write-x", "/a/./b", "/\xff/\n"} {
		f.Add(s, "/w/x")
	}
	f.Fuzz(func(t *testing.T, p, q string) {
		b, err := planBulk("/w", []FileWrite{{Path: p, Data: []byte(p)}, {Path: q}}, 42)
		if err != nil {
			require.Nil(t, b)
			return
		}
		for _, s := range []string{p, q} {
			require.True(t, path.IsAbs(s), "%q accepted but not absolute", s)
			require.Equal(t, path.Clean(s), s, "%q accepted but not clean", s)
			require.NotEqual(t, "/", s)
			require.NotContains(t, s, "\x00")
			require.LessOrEqual(t, len(s), 4095)
		}
		require.NoError(t, b.WriteArchive(io.Discard))
	})
}
