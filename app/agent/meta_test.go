package agent_test

import (
	"encoding/json"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/agentwire"
)

func decodeJSON[T any](t *testing.T, resp *http.Response) T {
	t.Helper()
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var v T
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&v))
	return v
}

func TestStat(t *testing.T) {
	t.Parallel()
	srv, d := newServer(t), readFixtures(t)
	require.NoError(t, os.Chmod(d+"/all-bytes", os.ModeSetuid|0o751))
	get := func(p string) *http.Response {
		return do(t, http.MethodGet, srv.URL, agentwire.PathStat, pathQ(p), nil)
	}
	fi := decodeJSON[agentwire.FileInfo](t, get(d+"/all-bytes"))
	require.Equal(t, d+"/all-bytes", fi.Name)
	require.Equal(t, agentwire.TypeFile, fi.Type)
	require.Equal(t, int64(256), fi.Size)
	require.Equal(t, uint32(0o4751), fi.Mode)
	require.WithinDuration(t, time.Now(), fi.ModTime, time.Minute)

	for p, typ := range map[string]string{
		d + "/dir": agentwire.TypeDir, d + "/link-dir": agentwire.TypeSymlink, d + "/fifo": agentwire.TypeOther,
		d + "/link-dangling": agentwire.TypeSymlink, "/": agentwire.TypeDir,
	} {
		require.Equal(t, typ, decodeJSON[agentwire.FileInfo](t, get(p)).Type, p)
	}
	require.Equal(t, "/no/such/thing", decodeJSON[agentwire.FileInfo](t, get(d+"/link-dangling")).LinkTarget)

	requireFault(t, get(d+"/missing"), http.StatusNotFound, agentwire.CodeFileNotExist)
	requireFault(t, get(d+"/blk/x"), http.StatusConflict, agentwire.CodeNotDirectory)
	requireFault(t, get("rel"), http.StatusBadRequest, agentwire.CodeInvalid)
}

func TestList(t *testing.T) {
	t.Parallel()
	srv, d := newServer(t), readFixtures(t)
	list := func(p string) *http.Response {
		return do(t, http.MethodGet, srv.URL, agentwire.PathList, pathQ(p), nil)
	}
	infos := decodeJSON[[]agentwire.FileInfo](t, list(d))
	var names []string
	for _, fi := range infos {
		names = append(names, fi.Name)
	}
	require.Equal(t, []string{"all-bytes", "blk", "blk2", "dir", "empty", "fifo", "link-dangling", "link-dir",
		"link-file", "pointee", "sock"}, names, "sorted by name")
	require.Equal(t, agentwire.TypeSymlink, infos[7].Type, "entries are lstat'ed")
	require.Equal(t, "dir", infos[7].LinkTarget)

	require.Empty(t, decodeJSON[[]agentwire.FileInfo](t, list(d+"/dir")))
	require.Empty(t, decodeJSON[[]agentwire.FileInfo](t, list(d+"/link-dir")), "a symlink to a directory lists it")
	requireFault(t, list(d+"/empty"), http.StatusConflict, agentwire.CodeNotDirectory)
	requireFault(t, list(d+"/missing"), http.StatusNotFound, agentwire.CodeFileNotExist)
	require.NotEmpty(t, decodeJSON[[]agentwire.FileInfo](t, list("/")))
}

func TestRemove(t *testing.T) {
	t.Parallel()
	srv, d := newServer(t), readFixtures(t)
	rm := func(p string, kv ...string) *http.Response {
		return do(t, http.MethodPost, srv.URL, agentwire.PathRemove, pathQ(p, kv...), nil)
	}
	requireNoContent(t, rm(d+"/empty"))
	require.NoFileExists(t, d+"/empty")
	requireNoContent(t, rm(d+"/link-dir"))
	require.DirExists(t, d+"/dir", "a symlink is removed, never what it names")
	requireNoContent(t, rm(d+"/dir"))
	requireFault(t, rm(d+"/blk2"), http.StatusConflict, agentwire.CodeIsDirectory)
	require.FileExists(t, d+"/blk2/file")
	requireNoContent(t, rm(d+"/blk2", agentwire.QueryRecursive, "1"))
	require.NoDirExists(t, d+"/blk2")
	requireFault(t, rm(d+"/missing"), http.StatusNotFound, agentwire.CodeFileNotExist)
	requireFault(t, rm(d+"/blk/x"), http.StatusConflict, agentwire.CodeNotDirectory)
	requireFault(t, rm("/", agentwire.QueryRecursive, "1"), http.StatusBadRequest, agentwire.CodeInvalid)
	requireFault(t, rm(d+"/pointee", agentwire.QueryRecursive, "maybe"), http.StatusBadRequest, agentwire.CodeInvalid)
	requireFault(t, rm("/proc/self"), http.StatusForbidden, agentwire.CodeNotWritable)
}

func TestMkdir(t *testing.T) {
	t.Parallel()
	srv, d := newServer(t), readFixtures(t)
	mk := func(p string, kv ...string) *http.Response {
		return do(t, http.MethodPost, srv.URL, agentwire.PathMkdir, pathQ(p, kv...), nil)
	}
	requireNoContent(t, mk(d+"/new"))
	require.Equal(t, os.ModeDir|0o755, modeOf(t, d+"/new")|os.ModeDir)
	requireFault(t, mk(d+"/new"), http.StatusConflict, agentwire.CodeIsDirectory) // exists: mkdir(2)'s EEXIST
	requireNoContent(t, mk(d+"/new", agentwire.QueryParents, "1"))                // but fine for mkdir -p
	requireNoContent(t, mk(d+"/link-dir", agentwire.QueryParents, "1"))           // so is a symlink to one
	requireFault(t, mk(d+"/a/b"), http.StatusNotFound, agentwire.CodeFileNotExist)
	requireNoContent(t, mk(d+"/a/b", agentwire.QueryParents, "true"))
	require.Equal(t, os.FileMode(0o755), modeOf(t, d+"/a"))
	require.Equal(t, os.FileMode(0o755), modeOf(t, d+"/a/b"))
	requireFault(t, mk(d+"/empty"), http.StatusConflict, agentwire.CodeNotDirectory)
	requireFault(t, mk(d+"/blk/x", agentwire.QueryParents, "1"), http.StatusConflict, agentwire.CodeNotDirectory)
	requireNoContent(t, mk("/", agentwire.QueryParents, "1"))
	requireFault(t, mk("/"), http.StatusConflict, agentwire.CodeIsDirectory)
	requireFault(t, mk("/proc/sandgate-test", agentwire.QueryParents, "1"), http.StatusForbidden, agentwire.CodeNotWritable)
}

func TestVersionAndMethods(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	resp := do(t, http.MethodGet, srv.URL, agentwire.PathVersion, nil, nil)
	defer func() { _ = resp.Body.Close() }()
	b := make([]byte, 64)
	n, _ := resp.Body.Read(b)
	require.Equal(t, agentwire.Version, string(b[:n]))
	resp2 := do(t, http.MethodDelete, srv.URL, agentwire.PathFile, nil, nil)
	require.NoError(t, resp2.Body.Close())
	require.Equal(t, http.StatusMethodNotAllowed, resp2.StatusCode)
}
