package agent_test

import (
	"archive/tar"
	"bytes"
	"fmt"
	"net/http"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/agentwire"
)

// file is one member of a test batch.
type file struct {
	path, data string
}

// tarOf is the tar a provider sends for files.
func tarOf(t *testing.T, files ...file) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: f.path, Mode: 0o600, Size: int64(len(f.data)), Typeflag: tar.TypeReg}))
		_, err := tw.Write([]byte(f.data))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	return buf.Bytes()
}

func putBatch(t *testing.T, base string, body []byte) *http.Response {
	t.Helper()
	return do(t, http.MethodPut, base, agentwire.PathFiles, nil, bytes.NewReader(body))
}

// entries lists d's names.
func entries(t *testing.T, d string) []string {
	t.Helper()
	es, err := os.ReadDir(d)
	require.NoError(t, err)
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

func TestWriteFiles(t *testing.T) {
	t.Parallel()
	srv, d := newServer(t), t.TempDir()
	require.NoError(t, os.WriteFile(d+"/exec.sh", []byte("old"), 0o755))
	requireNoContent(t, putBatch(t, srv.URL, tarOf(t,
		file{d + "/new/deep/bin", "bin\x00\xff"},
		file{d + "/new/empty", ""},
		file{d + "/exec.sh", "#!/bin/bash\n"},
		file{d + "/dup", "first"},
		file{d + "/dup", "second"},
		file{d + "/odd name\nwith newline", "n"},
	)))
	require.Equal(t, "bin\x00\xff", readAll(t, d+"/new/deep/bin"))
	require.Empty(t, readAll(t, d+"/new/empty"))
	require.Equal(t, "second", readAll(t, d+"/dup"), "the last duplicate wins")
	require.Equal(t, "n", readAll(t, d+"/odd name\nwith newline"))
	for p, mode := range map[string]os.FileMode{
		d + "/new": 0o755, d + "/new/deep": 0o755, d + "/new/deep/bin": 0o644, d + "/exec.sh": 0o755,
	} {
		require.Equal(t, mode, modeOf(t, p)&os.ModePerm, p)
	}
	noTemp(t, d, d+"/new", d+"/new/deep")
	requireNoContent(t, putBatch(t, srv.URL, tarOf(t)))
}

func TestWriteFilesStopsAtFirstFailure(t *testing.T) {
	t.Parallel()
	srv, d := newServer(t), t.TempDir()
	require.NoError(t, os.MkdirAll(d+"/d", 0o755))
	doc := requireFault(t, putBatch(t, srv.URL, tarOf(t, file{d + "/a", "a"}, file{d + "/d", "d"}, file{d + "/c", "c"})),
		http.StatusConflict, agentwire.CodeIsDirectory)
	require.Equal(t, d+"/d", doc.Path, "the error names the member")
	require.ErrorContains(t, doc.Err(), d+"/d")
	require.Equal(t, "a", readAll(t, d+"/a"), "earlier members stay")
	require.NoFileExists(t, d+"/c", "later members are never written")
	require.ElementsMatch(t, []string{"a", "d"}, entries(t, d))
}

func TestWriteFilesBlockedParentLandsNothing(t *testing.T) {
	t.Parallel()
	srv, d := newServer(t), t.TempDir()
	require.NoError(t, os.WriteFile(d+"/blk", []byte("blocker"), 0o644))
	for _, batch := range [][]file{
		{{d + "/a", "a"}, {d + "/c", "c"}, {d + "/blk/x", "x"}},
		{{d + "/blk/x/y", "x"}, {d + "/a", "a"}},
		{{d + "/a", "a"}, {d + "/blk/deep/er/z", "z"}, {d + "/c", "c"}},
		{{d + "/m", "a file"}, {d + "/m/x", "its parent is a member"}},
	} {
		doc := requireFault(t, putBatch(t, srv.URL, tarOf(t, batch...)), http.StatusConflict, agentwire.CodeNotDirectory)
		require.Contains(t, []string{d + "/blk/x", d + "/blk/x/y", d + "/blk/deep/er/z", d + "/m/x"}, doc.Path)
		require.Equal(t, []string{"blk"}, entries(t, d), "nothing landed, no temporary file left")
	}
}

func TestWriteFilesShortOrBrokenTarLandsNothing(t *testing.T) {
	t.Parallel()
	srv, d := newServer(t), t.TempDir()
	body := tarOf(t, file{d + "/a", "a"}, file{d + "/b", string(bytes.Repeat([]byte("b"), 4096))})
	for _, cut := range []int{700, 1600, len(body) - 1100} {
		resp := rawPut(t, srv.URL, agentwire.PathFiles, "", len(body), body[:cut])
		requireFault(t, resp, http.StatusUnprocessableEntity, agentwire.CodeShortDelivery)
		require.Empty(t, entries(t, d), "cut at %d", cut)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	require.NoError(t, tw.WriteHeader(&tar.Header{Name: d + "/link", Linkname: "/etc", Typeflag: tar.TypeSymlink}))
	require.NoError(t, tw.Close())
	requireFault(t, putBatch(t, srv.URL, buf.Bytes()), http.StatusUnprocessableEntity, agentwire.CodeShortDelivery)
	requireFault(t, putBatch(t, srv.URL, []byte("not a tar at all, and not 512 bytes either")),
		http.StatusUnprocessableEntity, agentwire.CodeShortDelivery)
	for _, bad := range []string{"relative/x", d + "/../x", d + "/./y"} {
		resp := putBatch(t, srv.URL, tarOf(t, file{d + "/a", "a"}, file{bad, "x"}))
		requireFault(t, resp, http.StatusBadRequest, agentwire.CodeInvalid)
		require.Empty(t, entries(t, d), "member %q", bad)
	}
}

func TestWriteFilesThousands(t *testing.T) {
	t.Parallel()
	srv, d := newServer(t), t.TempDir()
	files := make([]file, 2000)
	for i := range files {
		files[i] = file{fmt.Sprintf("%s/d%02d/f%04d", d, i%50, i), fmt.Sprint(i)}
	}
	requireNoContent(t, putBatch(t, srv.URL, tarOf(t, files...)))
	require.Equal(t, "1999", readAll(t, files[1999].path))
	require.Len(t, entries(t, d), 50)
}
