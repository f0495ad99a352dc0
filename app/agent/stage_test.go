package agent_test

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/agentwire"
)

// stageTemp asks PathStage for p's temporary file and returns its path.
func stageTemp(t *testing.T, base, p string) string {
	t.Helper()
	resp := do(t, http.MethodPost, base, agentwire.PathStage, pathQ(p), nil)
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	return string(b)
}

// landTemp lands tmp onto p as size bytes (discard: size < 0).
func landTemp(t *testing.T, base, p, tmp string, size int) *http.Response {
	t.Helper()
	q := pathQ(p, agentwire.QueryTmp, tmp)
	if size < 0 {
		q.Set(agentwire.QueryDiscard, "1")
	} else {
		q.Set(agentwire.QuerySize, strconv.Itoa(size))
	}
	return do(t, http.MethodPost, base, agentwire.PathLand, q, nil)
}

func TestStagedWriteLands(t *testing.T) {
	t.Parallel()
	srv, d := newServer(t), t.TempDir()
	p := d + "/a/b/f"
	tmp := stageTemp(t, srv.URL, p)
	require.Equal(t, d+"/a/b", filepath.Dir(tmp))
	require.Equal(t, os.FileMode(0o755), modeOf(t, d+"/a"), "parents 0755")
	require.Empty(t, readAll(t, tmp), "an empty temporary, made before a byte")
	require.NoError(t, os.WriteFile(tmp, []byte("filled"), 0o600)) // the archive PUT
	requireNoContent(t, landTemp(t, srv.URL, p, tmp, 6))
	require.Equal(t, "filled", readAll(t, p))
	require.Equal(t, os.FileMode(0o644), modeOf(t, p))
	noTemp(t, d+"/a/b")
}

func TestStagedWriteKeepsMode(t *testing.T) {
	t.Parallel()
	srv, d := newServer(t), t.TempDir()
	p := d + "/f"
	require.NoError(t, os.WriteFile(p, []byte("old"), 0o600))
	require.NoError(t, os.Chmod(p, os.ModeSetgid|0o751))
	tmp := stageTemp(t, srv.URL, p)
	require.NoError(t, os.WriteFile(tmp, []byte("new"), 0o600))
	requireNoContent(t, landTemp(t, srv.URL, p, tmp, 3))
	require.Equal(t, "new", readAll(t, p))
	require.Equal(t, os.ModeSetgid|0o751, modeOf(t, p))
}

func TestStagedWriteWrongLength(t *testing.T) {
	t.Parallel()
	srv, d := newServer(t), t.TempDir()
	p := d + "/f"
	require.NoError(t, os.WriteFile(p, []byte("old"), 0o644))
	for _, body := range []string{"shor", "longer!"} {
		tmp := stageTemp(t, srv.URL, p)
		require.NoError(t, os.WriteFile(tmp, []byte(body), 0o600))
		requireFault(t, landTemp(t, srv.URL, p, tmp, 5), http.StatusUnprocessableEntity, agentwire.CodeSizeMismatch)
		require.Equal(t, "old", readAll(t, p))
		noTemp(t, d)
	}
	tmp := stageTemp(t, srv.URL, p)
	require.NoError(t, os.Remove(tmp)) // the body never arrived
	requireFault(t, landTemp(t, srv.URL, p, tmp, 0), http.StatusUnprocessableEntity, agentwire.CodeSizeMismatch)
}

// TestStagedWriteRefusesSwappedTemp: a temporary swapped for a symlink
// between the transfer and the landing is refused and removed, its
// target untouched.
func TestStagedWriteRefusesSwappedTemp(t *testing.T) {
	t.Parallel()
	srv, d := newServer(t), t.TempDir()
	p := d + "/f"
	require.NoError(t, os.WriteFile(d+"/secret", []byte("12345"), 0o600))
	tmp := stageTemp(t, srv.URL, p)
	require.NoError(t, os.Remove(tmp))
	require.NoError(t, os.Symlink(d+"/secret", tmp))
	requireFault(t, landTemp(t, srv.URL, p, tmp, 5), http.StatusUnprocessableEntity, agentwire.CodeSizeMismatch)
	_, err := os.Lstat(p)
	require.ErrorIs(t, err, os.ErrNotExist)
	noTemp(t, d)
	require.Equal(t, "12345", readAll(t, d+"/secret"))
}

func TestStagedWriteDiscard(t *testing.T) {
	t.Parallel()
	srv, d := newServer(t), t.TempDir()
	p := d + "/f"
	tmp := stageTemp(t, srv.URL, p)
	requireNoContent(t, landTemp(t, srv.URL, p, tmp, -1))
	noTemp(t, d)
	requireNoContent(t, landTemp(t, srv.URL, p, tmp, -1)) // already gone: fine
	_, err := os.Lstat(p)
	require.ErrorIs(t, err, os.ErrNotExist)
}

func TestStagedWriteFaultsBeforeAByte(t *testing.T) {
	t.Parallel()
	srv, d := newServer(t), t.TempDir()
	require.NoError(t, os.WriteFile(d+"/file", nil, 0o644))
	require.NoError(t, os.Mkdir(d+"/dir", 0o755))
	require.NoError(t, os.Mkdir(d+"/ro", 0o555))
	for p, want := range map[string]struct {
		status int
		code   string
	}{
		d + "/file/f":   {http.StatusConflict, agentwire.CodeNotDirectory},
		d + "/dir":      {http.StatusConflict, agentwire.CodeIsDirectory},
		"relative":      {http.StatusBadRequest, agentwire.CodeInvalid},
		"/dev/null":     {http.StatusConflict, agentwire.CodeNotReplaceable},
		d + "/ro/x/y/f": {http.StatusForbidden, agentwire.CodeNotWritable},
	} {
		if os.Geteuid() == 0 && want.code == agentwire.CodeNotWritable {
			continue // root writes through the mode bits
		}
		requireFault(t, do(t, http.MethodPost, srv.URL, agentwire.PathStage, pathQ(p), nil), want.status, want.code)
	}
	noTemp(t, d, d+"/dir")
}

// TestLandRefusesForeignTemp: the route renames or removes only a
// temporary name beside its target, whatever the caller sends.
func TestLandRefusesForeignTemp(t *testing.T) {
	t.Parallel()
	srv, d := newServer(t), t.TempDir()
	require.NoError(t, os.Mkdir(d+"/sub", 0o755))
	require.NoError(t, os.WriteFile(d+"/keep", []byte("k"), 0o644))
	for _, tmp := range []string{d + "/keep", d + "/sub/.sandgate-write-0123456789abcdef",
		d + "/.sandgate-write-0123", d + "/.sandgate-write-0123456789ABCDEF", ""} {
		for _, size := range []int{1, -1} {
			requireFault(t, landTemp(t, srv.URL, d+"/f", tmp, size), http.StatusBadRequest, agentwire.CodeInvalid)
		}
	}
	require.Equal(t, "k", readAll(t, d+"/keep"))
	tmp := stageTemp(t, srv.URL, d+"/f")
	q := pathQ(d+"/f", agentwire.QueryTmp, tmp, agentwire.QuerySize, "-1")
	requireFault(t, do(t, http.MethodPost, srv.URL, agentwire.PathLand, q, nil), http.StatusBadRequest, agentwire.CodeInvalid)
}
