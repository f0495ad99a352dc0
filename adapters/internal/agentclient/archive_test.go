package agentclient

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	neturl "net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/agentwire"
	"github.com/sandgate/sandgate/core/sandbox"
)

// fakeArchive is an engine's archive endpoint over a map of files: Get
// answers the member stored for a path, Put extracts like the daemon (a
// broken or truncated archive fails the call, after what it wrote).
type fakeArchive struct {
	mu      sync.Mutex
	members map[string]*tar.Header // Get's answers by path
	data    map[string][]byte
	gets    int
	putErr  error
}

func (f *fakeArchive) Get(_ context.Context, p string) (io.ReadCloser, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gets++
	hdr, ok := f.members[p]
	if !ok {
		return nil, sandbox.ErrFileNotExist
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(hdr); err != nil {
		return nil, err
	}
	if hdr.Typeflag == tar.TypeReg {
		_, _ = tw.Write(bytes.Repeat([]byte("a"), int(hdr.Size)))
	}
	_ = tw.Close()
	return io.NopCloser(&buf), nil
}

func (f *fakeArchive) Put(_ context.Context, dir string, body io.Reader) error {
	tr := tar.NewReader(body)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return f.putErr
		}
		if err != nil {
			return err
		}
		data, err := io.ReadAll(tr)
		f.mu.Lock()
		f.data[dir+"/"+hdr.Name] = data
		f.mu.Unlock()
		if err != nil {
			return err
		}
	}
}

// fileAgent answers PathFile's GET and HEAD with sizes[path] bytes (a path
// not in sizes: file_not_exist), and counts the HEADs.
func fileAgent(t *testing.T, sizes map[string]int64) (*Conn, *int) {
	heads := 0
	var mu sync.Mutex
	_, c := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Query().Get(agentwire.QueryPath)
		size, ok := sizes[p]
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			_ = json.NewEncoder(w).Encode(agentwire.Error{Code: agentwire.CodeFileNotExist, Path: p})
			return
		}
		if r.Method == http.MethodHead {
			mu.Lock()
			heads++
			mu.Unlock()
		}
		w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
		if r.Method == http.MethodGet {
			_, _ = w.Write(bytes.Repeat([]byte("g"), int(size)))
		}
	})
	return c, &heads
}

func TestPlaneReadsLargeFilesThroughTheArchive(t *testing.T) {
	c, heads := fileAgent(t, map[string]int64{"/small": 10, "/big": 100, "/swapped": 100, "/grown": 100})
	fa := &fakeArchive{members: map[string]*tar.Header{
		"/big":     {Typeflag: tar.TypeReg, Name: "big", Size: 100, Mode: 0o644},
		"/swapped": {Typeflag: tar.TypeSymlink, Name: "swapped", Linkname: "/etc/shadow"},
		"/grown":   {Typeflag: tar.TypeReg, Name: "grown", Size: 300, Mode: 0o644},
	}}
	p := Plane{Conn: c, Archive: fa, Rule: ArchiveRule{ReadAbove: 50, WriteAbove: 50, BulkFrom: 3, BulkAbove: 50}}
	read := func(path string, maxBytes int64) (string, error) {
		rc, n, err := p.ReadFileStream(t.Context(), path, maxBytes)
		if err != nil {
			return "", err
		}
		defer func() { _ = rc.Close() }()
		b, err := io.ReadAll(rc)
		require.Len(t, b, int(n))
		return string(b), err
	}

	got, err := read("/small", 200)
	require.NoError(t, err)
	require.Equal(t, "gggggggggg", got, "a file at most the threshold rides the agent")
	got, err = read("/big", 200)
	require.NoError(t, err)
	require.Equal(t, string(bytes.Repeat([]byte("a"), 100)), got, "a larger one the archive")
	require.Equal(t, 2, *heads)
	require.Equal(t, 1, fa.gets)

	// The archive runs as root: what it answers is checked again.
	_, err = read("/swapped", 200)
	require.ErrorIs(t, err, sandbox.ErrNotRegularFile, "a file swapped for a symlink after the agent's checks")
	_, err = read("/grown", 200)
	require.ErrorIs(t, err, sandbox.ErrFileTooLarge, "a file grown past the cap after the agent's checks")

	// A refusal is the agent's classified answer; a cap at most
	// the threshold never asks the size first.
	_, err = read("/missing", 200)
	require.ErrorIs(t, err, sandbox.ErrFileNotExist)
	*heads = 0
	_, err = read("/big", 50)
	require.Error(t, err)
	require.Zero(t, *heads)
}

// stageAgent serves PathStage and PathLand, recording each land's query,
// and PathFile's PUT, counting it.
type stageAgent struct {
	mu    sync.Mutex
	lands []neturl.Values
	puts  int
}

const stagedTmp = "/w/.sandgate-write-0123456789abcdef"

func newStageAgent(t *testing.T) (*stageAgent, *Conn) {
	a := &stageAgent{}
	_, c := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		defer a.mu.Unlock()
		switch r.URL.Path {
		case agentwire.PathStage:
			_, _ = io.WriteString(w, stagedTmp)
		case agentwire.PathLand:
			a.lands = append(a.lands, r.URL.Query())
			w.WriteHeader(http.StatusNoContent)
		case agentwire.PathFile:
			_, _ = io.Copy(io.Discard, r.Body)
			a.puts++
			w.WriteHeader(http.StatusNoContent)
		}
	})
	return a, c
}

func (a *stageAgent) landed() []neturl.Values {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.lands
}

func TestPlaneWritesLargeBodiesThroughTheArchive(t *testing.T) {
	a, c := newStageAgent(t)
	fa := &fakeArchive{data: map[string][]byte{}}
	p := Plane{Conn: c, Archive: fa, Rule: ArchiveRule{ReadAbove: 50, WriteAbove: 50, BulkFrom: 3, BulkAbove: 50}}

	require.NoError(t, p.WriteFileStream(t.Context(), "/w/f", bytes.NewReader(make([]byte, 50)), 50))
	require.Equal(t, 1, a.puts, "a body at most the threshold rides the agent")
	require.Empty(t, a.landed())

	body := bytes.Repeat([]byte("b"), 100)
	require.NoError(t, p.WriteFileStream(t.Context(), "/w/f", bytes.NewReader(body), 100))
	require.Equal(t, body, fa.data[stagedTmp], "the archive filled the agent's temporary")
	require.Equal(t, []neturl.Values{{"path": {"/w/f"}, "tmp": {stagedTmp}, "size": {"100"}}}, a.landed())
}

func TestPlaneArchivedWriteDiscardsOnWrongLength(t *testing.T) {
	for name, have := range map[string]int{"short": 99, "long": 101} {
		t.Run(name, func(t *testing.T) {
			a, c := newStageAgent(t)
			p := Plane{Conn: c, Archive: &fakeArchive{data: map[string][]byte{}}, Rule: ArchiveRule{ReadAbove: 50, WriteAbove: 50, BulkFrom: 3, BulkAbove: 50}}
			err := p.WriteFileStream(t.Context(), "/w/f", bytes.NewReader(make([]byte, have)), 100)
			require.ErrorIs(t, err, sandbox.ErrSizeMismatch)
			require.Equal(t, []neturl.Values{{"path": {"/w/f"}, "tmp": {stagedTmp}, "discard": {"1"}}}, a.landed())
		})
	}
}

// blockedSource yields n bytes, then blocks until released.
type blockedSource struct {
	n       int
	reached chan struct{}
	release chan struct{}
}

func (b *blockedSource) Read(p []byte) (int, error) {
	if b.n == 0 {
		select {
		case <-b.reached:
		default:
			close(b.reached)
		}
		<-b.release
		return 0, io.EOF
	}
	k := min(len(p), b.n)
	b.n -= k
	return k, nil
}

// TestPlaneArchivedWriteCancelled: a cancelled upload returns at once
// although its source blocks, and its temporary is discarded on a context
// that outlived the caller's, once the engine answered.
func TestPlaneArchivedWriteCancelled(t *testing.T) {
	a, c := newStageAgent(t)
	fa := &fakeArchive{data: map[string][]byte{}}
	p := Plane{Conn: c, Archive: fa, Rule: ArchiveRule{ReadAbove: 50, WriteAbove: 50, BulkFrom: 3, BulkAbove: 50}}
	src := &blockedSource{n: 60, reached: make(chan struct{}), release: make(chan struct{})}
	t.Cleanup(func() { close(src.release) })
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-src.reached
		cancel()
	}()
	start := time.Now()
	err := p.WriteFileStream(ctx, "/w/f", src, 100)
	require.ErrorIs(t, err, context.Canceled)
	require.Less(t, time.Since(start), 5*time.Second)
	require.Equal(t, []neturl.Values{{"path": {"/w/f"}, "tmp": {stagedTmp}, "discard": {"1"}}}, a.landed())
}

// TestPutStagedEngineFailure: the engine's own failure is the answer when
// the source was fine.
func TestPutStagedEngineFailure(t *testing.T) {
	boom := errors.New("daemon says no")
	fa := &fakeArchive{data: map[string][]byte{}, putErr: boom}
	err := PutStaged(t.Context(), fa, stagedTmp, bytes.NewReader(make([]byte, 10)), 10)
	require.ErrorIs(t, err, boom)
}

// bulkAgent serves the staged batch routes, recording each call's route,
// discard flag and batch, and PathFiles' PUT.
type bulkAgent struct {
	mu    sync.Mutex
	calls []string
	last  []agentwire.StagedFile
}

func newBulkAgent(t *testing.T) (*bulkAgent, *Conn) {
	a := &bulkAgent{}
	_, c := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		defer a.mu.Unlock()
		call := r.URL.Path
		if r.URL.Query().Get(agentwire.QueryDiscard) == "1" {
			call += "?discard"
		}
		a.calls = append(a.calls, call)
		if r.URL.Path != agentwire.PathFiles {
			a.last = nil
			_ = json.NewDecoder(r.Body).Decode(&a.last)
		}
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	})
	return a, c
}

func TestPlaneRoutesBatchesByTheRule(t *testing.T) {
	a, c := newBulkAgent(t)
	fa := &fakeArchive{data: map[string][]byte{}}
	p := Plane{Conn: c, Archive: fa, BulkRoot: "/w", Rule: ArchiveRule{BulkFrom: 3, BulkAbove: 50}}
	small := []sandbox.FileWrite{{Path: "/w/a", Data: []byte("a")}, {Path: "/w/b", Data: []byte("b")}}
	require.NoError(t, p.WriteFiles(t.Context(), small))
	require.Equal(t, []string{agentwire.PathFiles}, a.calls, "a small batch rides the agent's stream")

	many := append(small, sandbox.FileWrite{Path: "/w/d/c", Data: []byte("c")})
	a.calls = nil
	require.NoError(t, p.WriteFiles(t.Context(), many))
	require.Equal(t, []string{agentwire.PathFilesStage, agentwire.PathFilesLand}, a.calls, "BulkFrom members go by the archive")
	require.Len(t, a.last, 3)
	for i, f := range a.last {
		require.Equal(t, many[i].Path, f.Path)
		require.EqualValues(t, 1, f.Size)
		require.Equal(t, many[i].Data, fa.data[f.Tmp], "the archive put member %d under its temporary", i)
	}

	a.calls = nil
	require.NoError(t, p.WriteFiles(t.Context(), []sandbox.FileWrite{{Path: "/w/big", Data: make([]byte, 51)}}))
	require.Equal(t, []string{agentwire.PathFilesStage, agentwire.PathFilesLand}, a.calls, "more than BulkAbove bytes too")
}

func TestPlaneArchivedBatchDiscardsOnFailedTransfer(t *testing.T) {
	a, c := newBulkAgent(t)
	boom := errors.New("daemon says no")
	p := Plane{Conn: c, Archive: &fakeArchive{data: map[string][]byte{}, putErr: boom}, BulkRoot: "/w", Rule: ArchiveRule{BulkFrom: 1}}
	err := p.WriteFiles(t.Context(), []sandbox.FileWrite{{Path: "/w/a", Data: []byte("a")}})
	require.ErrorIs(t, err, sandbox.ErrShortDelivery)
	require.ErrorIs(t, err, boom)
	require.Equal(t, []string{agentwire.PathFilesStage, agentwire.PathFilesLand + "?discard"}, a.calls)
}
