package agent_test

import (
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/agentwire"
	"github.com/sandgate/sandgate/core/sandbox"
)

// readFixtures makes every kind of path a read can meet (porttest's
// readFixtures) under a temporary directory, and returns it.
func readFixtures(t *testing.T) string {
	t.Helper()
	d := t.TempDir()
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	require.NoError(t, os.Mkdir(d+"/dir", 0o755))
	require.NoError(t, os.Mkdir(d+"/blk2", 0o755))
	require.NoError(t, os.WriteFile(d+"/all-bytes", all, 0o644))
	require.NoError(t, os.WriteFile(d+"/empty", nil, 0o644))
	require.NoError(t, syscall.Mkfifo(d+"/fifo", 0o644))
	l, err := net.Listen("unix", d+"/sock")
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	require.NoError(t, os.WriteFile(d+"/pointee", []byte("pointee"), 0o644))
	require.NoError(t, os.Symlink("pointee", d+"/link-file"))
	require.NoError(t, os.Symlink("/no/such/thing", d+"/link-dangling"))
	require.NoError(t, os.Symlink("dir", d+"/link-dir"))
	require.NoError(t, os.WriteFile(d+"/blk", []byte("blocker"), 0o644))
	require.NoError(t, os.WriteFile(d+"/blk2/file", []byte("blocker"), 0o644))
	return d
}

func TestReadFile(t *testing.T) {
	t.Parallel()
	srv, d := newServer(t), readFixtures(t)
	resp := do(t, http.MethodGet, srv.URL, agentwire.PathFile, pathQ(d+"/all-bytes"), nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, int64(256), resp.ContentLength, "the exact size")
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, readAll(t, d+"/all-bytes"), string(b))

	resp = do(t, http.MethodGet, srv.URL, agentwire.PathFile, pathQ(d+"/all-bytes", agentwire.QueryMax, "256"), nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, "max equal to the size reads")
	require.NoError(t, resp.Body.Close())

	resp = do(t, http.MethodHead, srv.URL, agentwire.PathFile, pathQ(d+"/all-bytes"), nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, int64(256), resp.ContentLength)
	require.NoError(t, resp.Body.Close())

	resp = do(t, http.MethodGet, srv.URL, agentwire.PathFile, pathQ(d+"/empty"), nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Zero(t, resp.ContentLength)
	require.NoError(t, resp.Body.Close())
}

func TestReadFileLargeStreams(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	p := filepath.Join(t.TempDir(), "big")
	data := make([]byte, sandbox.MaxFileBytes+1)
	for i := range data {
		data[i] = byte(i * 7)
	}
	require.NoError(t, os.WriteFile(p, data, 0o644))
	resp := do(t, http.MethodGet, srv.URL, agentwire.PathFile, pathQ(p), nil)
	requireFault(t, resp, http.StatusUnprocessableEntity, agentwire.CodeFileTooLarge)

	resp = do(t, http.MethodGet, srv.URL, agentwire.PathFile, pathQ(p, agentwire.QueryMax, strconv.Itoa(len(data))), nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, data, b)
}

func TestReadFileFaults(t *testing.T) {
	t.Parallel()
	srv, d := newServer(t), readFixtures(t)
	for _, c := range []struct {
		path   string
		status int
		code   string
	}{
		{d + "/missing", http.StatusNotFound, agentwire.CodeFileNotExist},
		{d + "/missing-dir/x", http.StatusNotFound, agentwire.CodeFileNotExist},
		{d + "/dir", http.StatusConflict, agentwire.CodeIsDirectory},
		{d + "/fifo", http.StatusConflict, agentwire.CodeNotRegularFile},
		{d + "/sock", http.StatusConflict, agentwire.CodeNotRegularFile},
		{"/dev/null", http.StatusConflict, agentwire.CodeNotRegularFile},
		{d + "/link-file", http.StatusConflict, agentwire.CodeNotRegularFile},
		{d + "/link-dangling", http.StatusConflict, agentwire.CodeNotRegularFile},
		{d + "/link-dir", http.StatusConflict, agentwire.CodeIsDirectory},
		{d + "/blk/x", http.StatusConflict, agentwire.CodeNotDirectory},
		{d + "/blk/x/y", http.StatusConflict, agentwire.CodeNotDirectory},
		{d + "/blk2/file/x/y", http.StatusConflict, agentwire.CodeNotDirectory},
		{"/", http.StatusConflict, agentwire.CodeIsDirectory},
		{"relative", http.StatusBadRequest, agentwire.CodeInvalid},
		{d + "/../x", http.StatusBadRequest, agentwire.CodeInvalid},
		{"", http.StatusBadRequest, agentwire.CodeInvalid},
	} {
		resp := do(t, http.MethodGet, srv.URL, agentwire.PathFile, pathQ(c.path), nil)
		doc := requireFault(t, resp, c.status, c.code)
		if c.code != agentwire.CodeInvalid {
			require.Equal(t, c.path, doc.Path, "the error names the path")
			require.ErrorIs(t, doc.Err(), sentinelOf(c.code))
		}
	}
	for _, bad := range []string{"-1", "x", ""} {
		resp := do(t, http.MethodGet, srv.URL, agentwire.PathFile, pathQ(d+"/empty", agentwire.QueryMax, bad), nil)
		requireFault(t, resp, http.StatusBadRequest, agentwire.CodeInvalid)
	}
}

// sentinelOf is core/sandbox's sentinel of a path code.
func sentinelOf(code string) error {
	return map[string]error{
		agentwire.CodeFileNotExist:   sandbox.ErrFileNotExist,
		agentwire.CodeIsDirectory:    sandbox.ErrIsDirectory,
		agentwire.CodeNotDirectory:   sandbox.ErrNotDirectory,
		agentwire.CodeNotRegularFile: sandbox.ErrNotRegularFile,
		agentwire.CodeNotReplaceable: sandbox.ErrNotReplaceable,
		agentwire.CodeNotWritable:    sandbox.ErrNotWritable,
		agentwire.CodeNotReadable:    sandbox.ErrNotReadable,
		agentwire.CodeFileTooLarge:   sandbox.ErrFileTooLarge,
		agentwire.CodeSizeMismatch:   sandbox.ErrSizeMismatch,
		agentwire.CodeShortDelivery:  sandbox.ErrShortDelivery,
	}[code]
}
