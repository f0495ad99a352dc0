package sandbox

import (
	"archive/tar"
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWriteOneArchiveRoundTrip(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	require.NoError(t, WriteOneArchive(&buf, "m", strings.NewReader("hello"), 5))
	rc, n, err := OpenArchived(io.NopCloser(&buf), "/p", 5)
	require.NoError(t, err)
	require.EqualValues(t, 5, n)
	b, err := io.ReadAll(rc)
	require.NoError(t, err)
	require.Equal(t, "hello", string(b))
}

func TestWriteOneArchiveWrongLength(t *testing.T) {
	t.Parallel()
	for _, src := range []string{"hell", "hello!"} {
		require.ErrorIs(t, WriteOneArchive(io.Discard, "m", strings.NewReader(src), 5), ErrSizeMismatch, src)
	}
}

func TestOpenArchivedChecksTheHeader(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		hdr  tar.Header
		want error
	}{
		"symlink":   {tar.Header{Name: "l", Typeflag: tar.TypeSymlink, Linkname: "/etc/shadow"}, ErrNotRegularFile},
		"directory": {tar.Header{Name: "d", Typeflag: tar.TypeDir, Mode: 0o755}, ErrNotRegularFile},
		"too large": {tar.Header{Name: "f", Typeflag: tar.TypeReg, Size: 6, Mode: 0o644}, ErrFileTooLarge},
	} {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		require.NoError(t, tw.WriteHeader(&c.hdr))
		_, _ = tw.Write(make([]byte, c.hdr.Size))
		require.NoError(t, tw.Close())
		_, _, err := OpenArchived(io.NopCloser(&buf), "/p", 5)
		require.ErrorIs(t, err, c.want, name)
	}
}

func TestOpenArchivedShortStream(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	require.NoError(t, WriteOneArchive(&buf, "m", strings.NewReader("hello"), 5))
	rc, _, err := OpenArchived(io.NopCloser(io.LimitReader(&buf, 512+2)), "/p", 5)
	require.NoError(t, err)
	_, err = io.ReadAll(rc)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
}
