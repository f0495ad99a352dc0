package agent_test

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/agentwire"
)

// put writes data to p through PathFile.
func put(t *testing.T, base, p string, data []byte) *http.Response {
	t.Helper()
	return do(t, http.MethodPut, base, agentwire.PathFile, pathQ(p), bytes.NewReader(data))
}

func TestWriteFile(t *testing.T) {
	t.Parallel()
	srv, d := newServer(t), t.TempDir()
	p := d + "/a/b/c/f"
	requireNoContent(t, put(t, srv.URL, p, []byte("deep\x00\xff")))
	require.Equal(t, "deep\x00\xff", readAll(t, p))
	require.Equal(t, os.FileMode(0o644), modeOf(t, p), "a new file 0644")
	for _, dir := range []string{d + "/a", d + "/a/b", d + "/a/b/c"} {
		require.Equal(t, os.FileMode(0o755), modeOf(t, dir), dir)
	}
	requireNoContent(t, put(t, srv.URL, p, nil))
	require.Empty(t, readAll(t, p), "overwrite truncates")
	noTemp(t, d+"/a/b/c")
}

func TestWriteFileKeepsMode(t *testing.T) {
	t.Parallel()
	srv, d := newServer(t), t.TempDir()
	for _, mode := range []os.FileMode{0o755, 0o600, os.ModeSetuid | 0o750, os.ModeSticky | 0o700} {
		p := filepath.Join(d, mode.String())
		require.NoError(t, os.WriteFile(p, []byte("old"), 0o600))
		require.NoError(t, os.Chmod(p, mode))
		requireNoContent(t, put(t, srv.URL, p, []byte("new")))
		require.Equal(t, "new", readAll(t, p))
		require.Equal(t, mode, modeOf(t, p))
	}
}

func TestWriteFileReplacesSymlink(t *testing.T) {
	t.Parallel()
	srv, d := newServer(t), t.TempDir()
	require.NoError(t, os.WriteFile(d+"/pointee", []byte("pointee"), 0o600))
	require.NoError(t, os.Symlink("pointee", d+"/link"))
	require.NoError(t, os.Symlink("/no/where", d+"/dangling"))
	for _, p := range []string{d + "/link", d + "/dangling"} {
		requireNoContent(t, put(t, srv.URL, p, []byte("replaced")))
		fi, err := os.Lstat(p)
		require.NoError(t, err)
		require.True(t, fi.Mode().IsRegular())
		require.Equal(t, os.FileMode(0o644), modeOf(t, p), "the link's mode is not the pointee's")
	}
	require.Equal(t, "pointee", readAll(t, d+"/pointee"))
	require.NoFileExists(t, "/no/where")
}

func TestWriteFileFaults(t *testing.T) {
	t.Parallel()
	srv, d := newServer(t), t.TempDir()
	require.NoError(t, os.MkdirAll(d+"/dir/sub", 0o755))
	require.NoError(t, os.WriteFile(d+"/dir/sub/child", []byte("keep"), 0o644))
	require.NoError(t, os.Symlink("dir", d+"/dirlink"))
	require.NoError(t, os.WriteFile(d+"/blk", []byte("blocker"), 0o644))
	big := bytes.Repeat([]byte("z"), 256<<10)
	for _, c := range []struct {
		path   string
		status int
		code   string
	}{
		{d + "/dir", http.StatusConflict, agentwire.CodeIsDirectory},
		{d + "/dir/sub", http.StatusConflict, agentwire.CodeIsDirectory},
		{d + "/dirlink", http.StatusConflict, agentwire.CodeIsDirectory},
		{"/", http.StatusConflict, agentwire.CodeIsDirectory},
		{d + "/blk/f", http.StatusConflict, agentwire.CodeNotDirectory},
		{d + "/blk/x/f", http.StatusConflict, agentwire.CodeNotDirectory},
		{"/dev/null", http.StatusConflict, agentwire.CodeNotReplaceable},
		{"relative/x", http.StatusBadRequest, agentwire.CodeInvalid},
		{d + "//x", http.StatusBadRequest, agentwire.CodeInvalid},
	} {
		// A refused 256 KiB body is consumed, and answered.
		doc := requireFault(t, put(t, srv.URL, c.path, big), c.status, c.code)
		if c.code != agentwire.CodeInvalid {
			require.Equal(t, c.path, doc.Path)
		}
	}
	require.Equal(t, "keep", readAll(t, d+"/dir/sub/child"))
	require.Equal(t, "blocker", readAll(t, d+"/blk"))
	fi, err := os.Lstat(d + "/dirlink")
	require.NoError(t, err)
	require.Equal(t, os.ModeSymlink, fi.Mode()&os.ModeSymlink)
	noTemp(t, d, d+"/dir", d+"/dir/sub", "/dev")
}

func TestWriteFileWrongLength(t *testing.T) {
	t.Parallel()
	srv, d := newServer(t), t.TempDir()
	p := d + "/kept"
	require.NoError(t, os.WriteFile(p, []byte("old"), 0o600))
	for _, target := range []string{p, d + "/new"} {
		doc := requireFault(t, rawPut(t, srv.URL, agentwire.PathFile, target, 10, []byte("short")),
			http.StatusUnprocessableEntity, agentwire.CodeSizeMismatch)
		require.Equal(t, target, doc.Path)
	}
	require.Equal(t, "old", readAll(t, p))
	require.NoFileExists(t, d+"/new")
	noTemp(t, d)
}

func TestWriteFileNeedsLength(t *testing.T) {
	t.Parallel()
	srv, d := newServer(t), t.TempDir()
	// A reader of unknown length goes chunked: no Content-Length.
	resp := do(t, http.MethodPut, srv.URL, agentwire.PathFile, pathQ(d+"/f"), struct{ *strings.Reader }{strings.NewReader("x")})
	requireFault(t, resp, http.StatusLengthRequired, agentwire.CodeInvalid)
	require.NoFileExists(t, d+"/f")
}
