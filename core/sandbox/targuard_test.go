package sandbox

import (
	"archive/tar"
	"bytes"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"
)

func tarOf(t *testing.T, files map[string]string, long bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	require.NoError(t, tw.WriteHeader(&tar.Header{Name: "root/", Typeflag: tar.TypeDir, Mode: 0o755}))
	for name, data := range files {
		if long {
			name = strings.Repeat("d/", 80) + name // forces a PAX or GNU long-name entry
		}
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: "root/" + name, Mode: 0o644, Size: int64(len(data))}))
		_, err := tw.Write([]byte(data))
		require.NoError(t, err)
	}
	require.NoError(t, tw.WriteHeader(&tar.Header{Name: "root/link", Typeflag: tar.TypeSymlink, Linkname: "nowhere"}))
	require.NoError(t, tw.Close())
	return buf.Bytes()
}

func TestTarGuardPassesWholeArchives(t *testing.T) {
	t.Parallel()
	for _, long := range []bool{false, true} {
		archive := tarOf(t, map[string]string{"a": "hello", "b": strings.Repeat("x", 1500), "empty": ""}, long)
		for _, r := range []func(io.Reader) io.Reader{
			func(r io.Reader) io.Reader { return r },
			iotest.OneByteReader,
			iotest.HalfReader,
		} {
			got, err := io.ReadAll(r(NewTarGuard(io.NopCloser(bytes.NewReader(archive)))))
			require.NoError(t, err)
			require.Equal(t, archive, got, "bytes pass through unchanged")
		}
	}
}

func TestTarGuardRefusesTruncation(t *testing.T) {
	t.Parallel()
	archive := tarOf(t, map[string]string{"a": strings.Repeat("y", 3000)}, false)
	// Every cut before the end-of-archive marker is an error.
	for _, cut := range []int{0, 100, 512, 700, 1024 + 2000, len(archive) - 1024 - 1} {
		_, err := io.ReadAll(NewTarGuard(io.NopCloser(bytes.NewReader(archive[:cut]))))
		require.ErrorIs(t, err, ErrTruncatedArchive, "cut at %d", cut)
	}
	// A cut inside the trailing zero blocks is still a whole archive.
	_, err := io.ReadAll(NewTarGuard(io.NopCloser(bytes.NewReader(archive[:len(archive)-512]))))
	require.NoError(t, err)
}

func TestTarGuardRefusesGarbage(t *testing.T) {
	t.Parallel()
	junk := bytes.Repeat([]byte("not a tar "), 100)
	_, err := io.ReadAll(NewTarGuard(io.NopCloser(bytes.NewReader(junk))))
	require.ErrorIs(t, err, ErrTruncatedArchive)
}

func TestParseTarSize(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   []byte
		want int64
		ok   bool
	}{
		{[]byte("00000000012\x00"), 10, true},
		{[]byte("         12 "), 10, true},
		{[]byte("\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"), 0, true},
		{[]byte{0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0}, 256, true},
		{[]byte("0000000001x\x00"), 0, false},
		{[]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, 0, false},
	} {
		got, ok := parseTarSize(tc.in[:min(len(tc.in), 12)])
		require.Equal(t, tc.ok, ok, "%q", tc.in)
		require.Equal(t, tc.want, got, "%q", tc.in)
	}
}
