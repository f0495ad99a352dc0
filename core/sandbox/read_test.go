package sandbox

import (
	"bytes"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/sandbox/shell"
)

func TestReadArgs(t *testing.T) {
	t.Parallel()
	argv, err := ReadArgs("/-a b/c", MaxFileBytes)
	require.NoError(t, err)
	require.Equal(t, []string{"/bin/bash", "-c", shell.Read, scriptName, "/-a b/c", "4194304"}, argv)

	requireArgsRefused(t, ReadArgs, []argsCase{
		{"relative", "a", 1, "not absolute", nil},
		{"unclean", "/a/./b", 1, "not clean", nil},
		{"root", "/", 1, "is a directory", ErrIsDirectory},
		{"negative maxBytes", "/a", -1, "maxBytes -1", ErrSizeNotALength},
	})
}

func TestParseReadHeader(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, in string
		max      int64
		want     int64
		err      string
		is       error
	}{
		{"zero", "0\n", 10, 0, "", nil},
		{"size", "1234\nrest", 4096, 1234, "", nil},
		{"at max", "10\n", 10, 10, "", nil},
		{"largest int64", "9223372036854775807\n", 1<<63 - 1, 1<<63 - 1, "", nil},
		{"above max", "11\n", 10, 0, "above maxBytes 10", ErrFileTooLarge},
		{"empty stream", "", 10, 0, "read header", io.ErrUnexpectedEOF},
		{"no newline", "12", 10, 0, "read header", io.ErrUnexpectedEOF},
		{"empty line", "\n", 10, 0, "malformed size", nil},
		{"leading zero", "07\n", 10, 0, "malformed size", nil},
		{"sign", "+7\n", 10, 0, "malformed", nil},
		{"negative", "-1\n", 10, 0, "malformed", nil},
		{"space", " 7\n", 10, 0, "malformed", nil},
		{"carriage return", "7\r\n", 10, 0, "malformed", nil},
		{"too many digits", "12345678901234567890\n", 1<<63 - 1, 0, "malformed", nil},
		{"overflow", "9999999999999999999\n", 1<<63 - 1, 0, "out of range", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := strings.NewReader(tc.in)
			n, err := ParseReadHeader(r, tc.max)
			if tc.err == "" {
				require.NoError(t, err)
				require.Equal(t, tc.want, n)
				rest, _ := io.ReadAll(r)
				require.Equal(t, tc.in[strings.IndexByte(tc.in, '\n')+1:], string(rest), "nothing past the newline is read")
				return
			}
			require.ErrorContains(t, err, tc.err)
			if tc.is != nil {
				require.ErrorIs(t, err, tc.is)
			}
			require.Zero(t, n)
		})
	}
}

func FuzzParseReadHeader(f *testing.F) {
	for _, s := range []string{"0\n", "42\nabc", "", "\n", "007\n", "99999999999999999999\n", "-1\n"} {
		f.Add([]byte(s), int64(100))
	}
	f.Fuzz(func(t *testing.T, in []byte, max int64) {
		r := bytes.NewReader(in)
		n, err := ParseReadHeader(r, max)
		if err != nil {
			require.Zero(t, n)
			return
		}
		require.GreaterOrEqual(t, n, int64(0))
		require.LessOrEqual(t, n, max)
		consumed := len(in) - r.Len()
		require.Equal(t, strconv.FormatInt(n, 10)+"\n", string(in[:consumed]))
	})
}

func TestClassifyRead(t *testing.T) {
	t.Parallel()
	require.NoError(t, ClassifyRead("/a", 0, ""))
	require.ErrorIs(t, ClassifyRead("/a", ExitFileTooLarge, "sandgate-fault:86:-:5 bytes, above 4\n"), ErrFileTooLarge)
	require.ErrorIs(t, ClassifyRead("/a", ExitNotRegularFile, "forged\n"), ErrNotRegularFile)
}

// readCase is one read run against real files in its own directory.
type readCase struct {
	name   string
	prep   func(t *testing.T, dir string)
	run    shellRun
	path   string // relative to dir
	max    int64  // 0 means MaxFileBytes
	code   int
	reason string
	want   []byte // the bytes a successful read returns
}

func (c readCase) exec(t *testing.T) {
	dir := sharedTempDir(t)
	if c.prep != nil {
		c.prep(t, dir)
	}
	p := filepath.Join(dir, c.path)
	max := c.max
	if max == 0 {
		max = MaxFileBytes
	}
	argv, err := ReadArgs(p, max)
	require.NoError(t, err)
	res := c.run.run(t, argv[2], argv[4:]...)
	if c.code != 0 {
		require.Empty(t, res.stdout, "no byte before a refusal")
		f := requireFault(t, res, c.code, "-")
		if c.reason != "" {
			require.Equal(t, c.reason, f.Reason)
		}
		requireClassified(t, ClassifyRead(p, res.code, res.stderr), c.code, p, f.Reason)
		return
	}
	require.Equal(t, 0, res.code, res.stderr)
	require.NoError(t, ClassifyRead(p, res.code, res.stderr))
	r := strings.NewReader(res.stdout)
	n, err := ParseReadHeader(r, max)
	require.NoError(t, err)
	require.Equal(t, int64(len(c.want)), n)
	rest, err := io.ReadAll(r)
	require.NoError(t, err)
	require.Equal(t, c.want, rest)
}

// content is a prep step: name holds b.
func content(name string, b []byte) func(*testing.T, string) {
	return func(t *testing.T, dir string) {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, b, 0o644))
	}
}

// linked is a prep step: base, then a symlink "link" to dest.
func linked(base func(*testing.T, string), dest string) func(*testing.T, string) {
	return func(t *testing.T, dir string) {
		if base != nil {
			base(t, dir)
		}
		require.NoError(t, os.Symlink(dest, filepath.Join(dir, "link")))
	}
}

func TestReadScript(t *testing.T) {
	t.Parallel()
	capFile := bytes.Repeat([]byte{0, 1, 0xff, '\n'}, MaxFileBytes/4)
	cases := []readCase{
		{name: "text", prep: content("f", []byte("hello\n")), path: "f", want: []byte("hello\n")},
		{name: "binary", prep: content("f", allBytes), path: "f", want: allBytes},
		{name: "empty", prep: content("f", nil), path: "f", want: []byte{}},
		{name: "exactly MaxFileBytes", prep: content("f", capFile), path: "f", want: capFile},
		{name: "MaxFileBytes plus one", prep: content("f", append([]byte{'x'}, capFile...)), path: "f",
			code: ExitFileTooLarge, reason: "4194305 bytes, above 4194304"},
		{name: "exactly the caller's cap", prep: content("f", bigBody), path: "f", max: int64(len(bigBody)), want: bigBody},
		{name: "one byte above the caller's cap", prep: content("f", bigBody), path: "f", max: int64(len(bigBody)) - 1,
			code: ExitFileTooLarge},
		{name: "through a symlinked parent", prep: linked(content("d/f", []byte("x")), "d"), path: "link/f", want: []byte("x")},
		{name: "missing", path: "nope", code: ExitFileNotExist, reason: "No such file or directory"},
		{name: "missing parent", path: "a/b/nope", code: ExitFileNotExist},
		{name: "blocker at depth 1", prep: content("blk", nil), path: "blk/f", code: ExitNotDirectory, reason: "Not a directory"},
		{name: "blocker at depth 2", prep: content("a/blk", nil), path: "a/blk/b/f", code: ExitNotDirectory},
		{name: "directory", prep: content("d/f", nil), path: "d", code: ExitIsDirectory, reason: "Is a directory"},
		{name: "symlink to a directory", prep: linked(content("d/f", nil), "d"), path: "link", code: ExitIsDirectory},
		{name: "symlink to a regular file", prep: linked(content("f", []byte("x")), "f"), path: "link",
			code: ExitNotRegularFile, reason: "symbolic link"},
		{name: "dangling symlink", prep: linked(nil, "nowhere"), path: "link", code: ExitNotRegularFile, reason: "symbolic link"},
		{name: "FIFO", path: "fifo", code: ExitNotRegularFile, reason: "not a regular file",
			prep: func(t *testing.T, dir string) { require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644)) }},
		{name: "socket", path: "sock", code: ExitNotRegularFile, prep: listenUnix},
		{name: "device", path: "null", code: ExitNotRegularFile,
			prep: func(t *testing.T, dir string) { mknodChar(t, filepath.Join(dir, "null")) }},
	}
	for _, name := range []string{"sp ace", "new\nline", "-dash", "$(touch pwned)", `q"u'o`, `b\s`, "*"} {
		cases = append(cases, readCase{name: "name " + strconv.Quote(name), prep: content(name, []byte(name)),
			path: name, want: []byte(name)})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.exec(t)
		})
	}
}

// listenUnix is a prep step: a socket file "sock", kept open for the test.
func listenUnix(t *testing.T, dir string) {
	l, err := net.Listen("unix", filepath.Join(dir, "sock"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
}

// A file the sandbox's user cannot open fails before the header with 89,
// ErrNotReadable carrying the kernel's reason (issue 11: it was a plain
// exit 1 no sentinel claimed, answered 500 internal).
func TestReadScriptUnreadable(t *testing.T) {
	t.Parallel()
	dir := sharedTempDir(t)
	p := filepath.Join(dir, "secret")
	require.NoError(t, os.WriteFile(p, []byte("s"), 0o600))
	argv, err := ReadArgs(p, MaxFileBytes)
	require.NoError(t, err)
	res := shellRun{nobody: true}.run(t, argv[2], argv[4:]...)
	require.Equal(t, ExitNotReadable, res.code)
	require.Empty(t, res.stdout)
	err = ClassifyRead(p, res.code, res.stderr)
	require.ErrorIs(t, err, ErrNotReadable)
	require.EqualError(t, err, p+": file not readable: Permission denied")
	for _, s := range []error{ErrFileNotExist, ErrIsDirectory, ErrNotDirectory, ErrNotRegularFile, ErrFileTooLarge} {
		require.NotErrorIs(t, err, s)
	}
}

func TestDecodeRead(t *testing.T) {
	t.Parallel()
	got, err := DecodeRead("/f", []byte("5\nhello"))
	if err != nil || string(got) != "hello" {
		t.Fatalf("DecodeRead = %q, %v; want hello", got, err)
	}
	for name, out := range map[string]string{"short": "5\nhell", "long": "5\nhello!", "no header": "hello"} {
		if _, err := DecodeRead("/f", []byte(out)); err == nil || !strings.Contains(err.Error(), `read "/f"`) {
			t.Errorf("%s: err = %v, want an error naming the path", name, err)
		}
	}
}
