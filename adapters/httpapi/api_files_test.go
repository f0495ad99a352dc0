package httpapi

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/core/session"
)

// member is one tar entry of a test archive.
type member struct {
	name string
	typ  byte
	data string
}

func archive(t *testing.T, members ...member) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, m := range members {
		hdr := &tar.Header{Name: m.name, Typeflag: m.typ, Mode: 0o644, Size: int64(len(m.data))}
		if m.typ != tar.TypeReg {
			hdr.Size = 0
		}
		if m.typ == tar.TypeSymlink {
			hdr.Linkname = "/etc/passwd"
		}
		require.NoError(t, tw.WriteHeader(hdr))
		_, err := tw.Write([]byte(m.data)[:hdr.Size])
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	return buf.Bytes()
}

func TestBatch(t *testing.T) {
	t.Parallel()
	reg := func(name, data string) member { return member{name, tar.TypeReg, data} }
	for _, tc := range []struct {
		name    string
		query   string
		members []member
		want    []sandbox.FileWrite
		status  int
		code    string
		msg     string
	}{
		{name: "absolute names", members: []member{reg("/w/a", "A"), {"/w/d/", tar.TypeDir, ""}, reg("/w/d/b", "")},
			want: []sandbox.FileWrite{{Path: "/w/a", Data: []byte("A")}, {Path: "/w/d/b", Data: []byte{}}}},
		{name: "relative names under root", query: "?root=/w", members: []member{reg("./a", "A"), {"./d/", tar.TypeDir, ""}, reg("d/b", "B")},
			want: []sandbox.FileWrite{{Path: "/w/a", Data: []byte("A")}, {Path: "/w/d/b", Data: []byte("B")}}},
		{name: "empty archive", members: nil, want: nil},
		{name: "relative name without root", members: []member{reg("a", "A")}, status: 400, code: CodeInvalidArgument, msg: `entry 0 name: path "a": not absolute`},
		{name: "absolute name with root", query: "?root=/w", members: []member{reg("/etc/x", "A")}, status: 400, code: CodeInvalidArgument, msg: "clean relative path"},
		{name: "dot-dot under root", query: "?root=/w", members: []member{reg("../etc/x", "A")}, status: 400, code: CodeInvalidArgument, msg: "clean relative path"},
		{name: "unclean absolute", members: []member{reg("/w/../etc/x", "A")}, status: 400, code: CodeInvalidArgument, msg: "not clean"},
		{name: "symlink", members: []member{{"/w/l", tar.TypeSymlink, ""}}, status: 400, code: CodeInvalidArgument, msg: "not a regular file or a directory"},
		{name: "relative root", query: "?root=w", members: []member{reg("a", "A")}, status: 400, code: CodeInvalidArgument, msg: "root"},
		{name: "too many files", members: []member{reg("/1", ""), reg("/2", ""), reg("/3", ""), reg("/4", "")}, status: 413, code: CodeFileTooLarge, msg: "more than 3 files"},
		{name: "too many bytes", members: []member{reg("/1", "12345"), reg("/2", "123456")}, status: 413, code: CodeFileTooLarge, msg: "more than 10 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newAPI(t, APIOptions{Token: apiToken, MaxBatchFiles: 3, MaxBatchBytes: 10})
			a := e.do(t, http.MethodPost, "/v1/sessions/ses_test/files:batch"+tc.query, bytes.NewReader(archive(t, tc.members...)), nil)
			if tc.status == 0 {
				require.Equal(t, http.StatusNoContent, a.status, a.msg)
				require.Equal(t, tc.want, e.svc.Batch())
				return
			}
			require.Equal(t, tc.status, a.status)
			require.Equal(t, tc.code, a.code)
			require.Contains(t, a.msg, tc.msg)
			require.Empty(t, e.svc.Calls(), "a refused batch reached the service")
		})
	}
}

func TestBatchBodyLimits(t *testing.T) {
	t.Parallel()
	e := newAPI(t, APIOptions{Token: apiToken, MaxBatchFiles: 1, MaxBatchBytes: 10})
	maxRaw := 10 + 3*tarOverhead
	// Announced too large: refused from the header.
	a := e.do(t, http.MethodPost, "/v1/sessions/ses_test/files:batch", bytes.NewReader(make([]byte, maxRaw+1)), nil)
	require.Equal(t, http.StatusRequestEntityTooLarge, a.status)
	require.Contains(t, a.msg, "body:")
	// Chunked and endless (a huge PAX header): refused by the byte bound.
	hdr := archive(t, member{"/" + strings.Repeat("x", 512<<10), tar.TypeReg, ""})
	a = e.do(t, http.MethodPost, "/v1/sessions/ses_test/files:batch", io.MultiReader(bytes.NewReader(hdr)), nil)
	require.Equal(t, http.StatusRequestEntityTooLarge, a.status, a.msg)
	require.Equal(t, CodeFileTooLarge, a.code)
	// Garbage.
	a = e.do(t, http.MethodPost, "/v1/sessions/ses_test/files:batch", strings.NewReader(strings.Repeat("garbage!", 200)), nil)
	require.Equal(t, http.StatusBadRequest, a.status)
	require.Contains(t, a.msg, "not a readable tar archive")
	require.Empty(t, e.svc.Calls())

	// Through the client: the refusal is file_too_large.
	err := e.client.WriteFiles(context.Background(), sid, []sandbox.FileWrite{{Path: "/a"}, {Path: "/b"}})
	require.ErrorIs(t, err, sandbox.ErrFileTooLarge)
	require.Empty(t, e.svc.Calls())
}

func TestWriteFileLimits(t *testing.T) {
	t.Parallel()
	e := newAPI(t, APIOptions{Token: apiToken, MaxStreamBytes: 8})
	// Chunked: no Content-Length.
	a := e.do(t, http.MethodPut, "/v1/sessions/ses_test/files?path=/f", io.MultiReader(strings.NewReader("abc")), nil)
	require.Equal(t, http.StatusLengthRequired, a.status)
	require.Equal(t, CodeLengthRequired, a.code)
	a = e.do(t, http.MethodPut, "/v1/sessions/ses_test/files?path=/f", strings.NewReader("123456789"), nil)
	require.Equal(t, http.StatusRequestEntityTooLarge, a.status)
	require.Equal(t, CodeFileTooLarge, a.code)
	require.Empty(t, e.svc.Calls())

	err := e.client.WriteFile(context.Background(), sid, "/f", strings.NewReader("123456789"), 9)
	require.ErrorIs(t, err, sandbox.ErrFileTooLarge)
	err = e.client.WriteFile(context.Background(), sid, "/f", strings.NewReader(""), -1)
	require.ErrorIs(t, err, session.ErrInvalidRequest)
	require.ErrorIs(t, err, sandbox.ErrSizeNotALength)
	require.Empty(t, e.svc.Calls())

	a = e.do(t, http.MethodPut, "/v1/sessions/ses_test/files?path=/f", strings.NewReader("12345678"), nil)
	require.Equal(t, http.StatusNoContent, a.status)
	require.Equal(t, []byte("12345678"), e.svc.File(sid, "/f"))
}

// brokenReader fails after n bytes.
type brokenReader struct{ n int }

func (b *brokenReader) Read(p []byte) (int, error) {
	if b.n == 0 {
		return 0, errors.New("lost the sandbox's stream")
	}
	k := min(len(p), b.n)
	clear(p[:k])
	b.n -= k
	return k, nil
}

func TestStreamsBreakVisibly(t *testing.T) {
	t.Parallel()
	e := newAPI(t, APIOptions{Token: apiToken})
	e.svc.ExportSource = func() io.ReadCloser { return io.NopCloser(&brokenReader{n: 100 << 10}) }
	e.svc.Source = func() (io.ReadCloser, int64) { return io.NopCloser(&brokenReader{n: 100 << 10}), 1 << 20 }
	ctx := context.Background()

	rc, err := e.client.Export(ctx, sid, "/w")
	require.NoError(t, err)
	n, err := io.Copy(io.Discard, rc)
	require.Error(t, err, "an aborted export read as complete")
	require.Less(t, n, int64(1<<20))
	require.NoError(t, rc.Close())

	a := e.do(t, http.MethodHead, "/v1/sessions/ses_test/files?path=/f", nil, nil)
	require.Equal(t, http.StatusOK, a.status)
	require.Equal(t, strconv.Itoa(1<<20), a.header.Get("Content-Length"))

	rc, size, err := e.client.ReadFile(ctx, sid, "/f", 1<<20)
	require.NoError(t, err)
	require.Equal(t, int64(1<<20), size)
	_, err = io.Copy(io.Discard, rc)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	require.NoError(t, rc.Close())
}

// pattern yields size deterministic bytes without holding them.
type pattern struct{ off, size int64 }

func (p *pattern) Read(b []byte) (int, error) {
	if p.off >= p.size {
		return 0, io.EOF
	}
	n := int(min(int64(len(b)), p.size-p.off))
	for i := range n {
		b[i] = byte((p.off + int64(i)) * 7)
	}
	p.off += int64(n)
	return n, nil
}

func patternSum(size int64) [sha256.Size]byte {
	h := sha256.New()
	_, _ = io.Copy(h, &pattern{size: size})
	var out [sha256.Size]byte
	copy(out[:], h.Sum(nil))
	return out
}

// TestStreaming64MiB moves 64 MiB through the client and the handler in
// both directions and checks that nothing held it: the bytes allocated
// during each transfer stay far below its size. Not parallel, so no other
// test's allocations count.
func TestStreaming64MiB(t *testing.T) {
	const size = 64 << 20
	e := newAPI(t, APIOptions{Token: apiToken, MaxStreamBytes: size})
	want := patternSum(size)
	ctx := context.Background()
	var got [sha256.Size]byte
	var gotN int64
	e.svc.Sink = func(src io.Reader, n int64) error {
		h := sha256.New()
		c, err := io.Copy(h, src)
		gotN = c
		copy(got[:], h.Sum(nil))
		if c != n {
			return errors.New("short")
		}
		return err
	}
	e.svc.Source = func() (io.ReadCloser, int64) { return io.NopCloser(&pattern{size: size}), size }

	allocated := func(f func()) uint64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	up := allocated(func() {
		require.NoError(t, e.client.WriteFile(ctx, sid, "/big", &pattern{size: size}, size))
	})
	require.Equal(t, int64(size), gotN)
	require.Equal(t, want, got)

	var down [sha256.Size]byte
	downAlloc := allocated(func() {
		rc, n, err := e.client.ReadFile(ctx, sid, "/big", size)
		require.NoError(t, err)
		require.Equal(t, int64(size), n)
		h := sha256.New()
		_, err = io.Copy(h, rc)
		require.NoError(t, err)
		require.NoError(t, rc.Close())
		copy(down[:], h.Sum(nil))
	})
	require.Equal(t, want, down)
	const bound = 8 << 20
	require.Less(t, up, uint64(bound), "the upload allocated %s bytes", strconv.FormatUint(up, 10))
	require.Less(t, downAlloc, uint64(bound), "the download allocated %s bytes", strconv.FormatUint(downAlloc, 10))
	t.Logf("allocated for 64 MiB: up %d KiB, down %d KiB", up>>10, downAlloc>>10)
}
