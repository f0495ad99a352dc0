package cli

import (
	"bytes"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/domain"
)

// tenMiB is random content over the progress threshold.
func tenMiB(t *testing.T) []byte {
	t.Helper()
	b := make([]byte, 10<<20)
	r := rand.NewChaCha8([32]byte{1})
	_, err := r.Read(b)
	require.NoError(t, err)
	return b
}

func TestCpUploadFileWithProgress(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.terminal = true
	data := tenMiB(t)
	src := filepath.Join(t.TempDir(), "big.bin")
	require.NoError(t, os.WriteFile(src, data, 0o600))

	r := h.run("cp", src, "s1:/workspace/in/", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	require.JSONEq(t, `{"source":"`+src+`","destination":"s1:/workspace/in/big.bin","bytes":10485760}`, r.stdout)
	require.True(t, bytes.Equal(data, h.svc.File(domain.MustParseSessionID("s1"), "/workspace/in/big.bin")), "the file arrives whole, under its base name")
	require.Equal(t, []string{"write s1 /workspace/in/big.bin"}, h.svc.Calls())
	require.True(t, strings.HasPrefix(r.stderr, "\rupload ["), r.stderr)
	require.True(t, strings.HasSuffix(r.stderr, "\rupload [==============================] 100% 10.0 MiB / 10.0 MiB\n"), r.stderr)
	require.LessOrEqual(t, strings.Count(r.stderr, "\r"), 101, "one redraw per percent at most")
}

func TestCpDownloadFileWithProgress(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.terminal = true
	data := tenMiB(t)
	h.svc.Put(domain.MustParseSessionID("s1"), "/workspace/out.bin", data)
	dir := t.TempDir()

	r := h.run("cp", "s1:/workspace/out.bin", dir)
	require.Equal(t, 0, r.code, r.stderr)
	require.Empty(t, r.stdout, "people get no output but the bar")
	got, err := os.ReadFile(filepath.Join(dir, "out.bin"))
	require.NoError(t, err)
	require.True(t, bytes.Equal(data, got))
	require.True(t, strings.HasSuffix(r.stderr, "100% 10.0 MiB / 10.0 MiB\n"), r.stderr)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file is left behind")
}

func TestCpNoProgressWithoutTerminalOrForSmallFiles(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.svc.Put(domain.MustParseSessionID("s1"), "/big", tenMiB(t))
	r := h.run("cp", "s1:/big", "-")
	require.Equal(t, 0, r.code, r.stderr)
	require.Empty(t, r.stderr, "stderr is no terminal")
	require.True(t, bytes.Equal(h.svc.File(domain.MustParseSessionID("s1"), "/big"), []byte(r.stdout)))

	h.terminal = true
	h.svc.Put(domain.MustParseSessionID("s1"), "/small", []byte("hello"))
	r = h.run("cp", "s1:/small", "-")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "hello", r.stdout)
	require.Empty(t, r.stderr, "4 MiB or less draws no bar")
}

func TestCpUploadFromStdin(t *testing.T) {
	t.Parallel()
	data := tenMiB(t)
	// A pipe is spooled to learn its size; a redirected file is sent as is.
	f := filepath.Join(t.TempDir(), "stdin")
	require.NoError(t, os.WriteFile(f, data, 0o600))
	file, err := os.Open(f)
	require.NoError(t, err)
	t.Cleanup(func() { _ = file.Close() })
	for name, stdin := range map[string]io.Reader{"pipe": bytes.NewReader(data), "file": file} {
		h := newHarness(t)
		h.stdin = stdin
		r := h.run("cp", "--json", "-", "s1:/workspace/x")
		require.Equal(t, 0, r.code, name+": "+r.stderr)
		require.JSONEq(t, `{"source":"-","destination":"s1:/workspace/x","bytes":10485760}`, r.stdout, name)
		require.True(t, bytes.Equal(data, h.svc.File(domain.MustParseSessionID("s1"), "/workspace/x")), name)
	}
}

func TestCpDownloadJSONAndFailureLeavesNoFile(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.svc.Put(domain.MustParseSessionID("s1"), "/a", []byte("abc"))
	dst := filepath.Join(t.TempDir(), "a.copy")
	r := h.run("cp", "s1:/a", dst, "--json")
	require.Equal(t, 0, r.code, r.stderr)
	require.JSONEq(t, `{"source":"s1:/a","destination":"`+dst+`","bytes":3}`, r.stdout)
	r = h.run("cp", "s1:/a", filepath.Dir(dst), "--json")
	require.Equal(t, 0, r.code, r.stderr)
	require.JSONEq(t, `{"source":"s1:/a","destination":"`+filepath.Join(filepath.Dir(dst), "a")+`","bytes":3}`, r.stdout)

	missing := filepath.Join(filepath.Dir(dst), "missing")
	r = h.run("cp", "s1:/nope", missing)
	require.Equal(t, ExitFailure, r.code)
	require.Equal(t, "executor cp: /nope: no such file or directory in session s1\n", r.stderr)
	require.NoFileExists(t, missing)
	entries, err := os.ReadDir(filepath.Dir(dst))
	require.NoError(t, err)
	require.Len(t, entries, 2, "a.copy and a, nothing else")
}

func TestCpBrokenDownloadLeavesNoFile(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.svc.Put(domain.MustParseSessionID("s1"), "/a", []byte("abc"))
	h.svc.Overstate = 5
	dir := t.TempDir()
	r := h.run("cp", "s1:/a", filepath.Join(dir, "a"))
	require.Equal(t, ExitFailure, r.code)
	require.Equal(t, "executor cp: download of s1:/a broke after 3 of 8 bytes: unexpected EOF\n", r.stderr)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries, "neither the file nor its temporary remains")
}

func TestCpUsageErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"cp", "a"}, "want 2 argument(s) (SRC DST), got 1"},
		{[]string{"cp", "a", "b"}, "exactly one of SRC and DST must be SESSION:/path"},
		{[]string{"cp", "s1:/a", "s2:/b"}, "exactly one of SRC and DST must be SESSION:/path"},
		{[]string{"cp", "Bad:/a", "b"}, "exactly one of SRC and DST must be SESSION:/path"},
		{[]string{"cp", "s1:rel", "b"}, "exactly one of SRC and DST must be SESSION:/path"},
		{[]string{"cp", "--json", "s1:/a", "-"}, "--json with DST -: stdout carries the file"},
		{[]string{"cp", "-", "s1:/dir/"}, "DST /dir/: name the file when SRC is -"},
		{[]string{"cp", dir, "s1:/x"}, dir + " is not a regular file (cp copies one file)"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			h.stdin = strings.NewReader("x")
			r := h.run(tc.args...)
			require.Equal(t, ExitUsage, r.code, r.stderr)
			require.Contains(t, r.stderr, "executor cp: "+tc.want+"\n")
			require.Empty(t, h.svc.Calls())
		})
	}
}

func TestExport(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := h.run("export", "s1")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "tar:/workspace", r.stdout)

	out := filepath.Join(t.TempDir(), "x.tar")
	r = h.run("export", "s1", "--root", "/data", "-o", out)
	require.Equal(t, 0, r.code, r.stderr)
	require.Empty(t, r.stdout)
	got, err := os.ReadFile(out)
	require.NoError(t, err)
	require.Equal(t, "tar:/data", string(got))
	require.Equal(t, []string{"export s1 /workspace", "export s1 /data"}, h.svc.Calls())
}

func TestExportRefusesATerminal(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	var out, errOut bytes.Buffer
	s := Streams{Stdout: &out, Stderr: &errOut, Getenv: func(k string) string { return h.env[k] }, StdoutIsTerminal: true}
	code := Run(t.Context(), []string{"export", "s1"}, s)
	require.Equal(t, ExitUsage, code)
	require.Contains(t, errOut.String(), "executor export: stdout is a terminal: redirect it (> x.tar) or give -o FILE\n")
	require.Empty(t, h.svc.Calls())
}
