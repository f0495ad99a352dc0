package porttest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/ports"
)

// streamRows: WriteFileStream (C-STREAM-1).
func streamRows() []row {
	return []row{
		{"C-STREAM-1/exact-size", func(t *testing.T, s *suite) {
			sb := s.fresh(t)
			data := payload(300<<10, 11)
			require.NoError(t, sb.WriteFileStream(ctx(t), "/workspace/s/exact", bytes.NewReader(data), int64(len(data))))
			require.Equal(t, sha(data), sha(readBack(t, sb, "/workspace/s/exact")))
			require.Equal(t, "644", statMode(t, sb, "/workspace/s/exact"))
			require.Equal(t, "755", statMode(t, sb, "/workspace/s"))
		}},
		{"C-STREAM-1/zero-size", func(t *testing.T, s *suite) {
			sb := s.fresh(t)
			require.NoError(t, sb.WriteFileStream(ctx(t), "/workspace/zero", bytes.NewReader(nil), 0))
			require.Empty(t, readBack(t, sb, "/workspace/zero"))
		}},
		{"C-STREAM-1/short-source", func(t *testing.T, s *suite) {
			sb := s.fresh(t)
			wrongLength(t, sb, 5, 10)
			wrongLength(t, sb, 0, 1)
			wrongLength(t, sb, 100<<10, 200<<10)
		}},
		{"C-STREAM-1/long-source", func(t *testing.T, s *suite) {
			sb := s.fresh(t)
			wrongLength(t, sb, 10, 5)
			wrongLength(t, sb, 1, 0)
			wrongLength(t, sb, 300<<10, 200<<10)
		}},
		{"C-STREAM-1/negative-size-refused-first", func(t *testing.T, s *suite) {
			sb := s.fresh(t)
			for _, size := range []int64{-1, -1 << 40} {
				err := sb.WriteFileStream(ctx(t), "/workspace/never/made/f", failReader{t}, size)
				require.ErrorIs(t, err, sandbox.ErrSizeNotALength)
			}
			require.False(t, exists(t, sb, "/workspace/never"), "a directory was created for a refused write")
		}},
		{"C-STREAM-1/binary-payload", func(t *testing.T, s *suite) {
			sb := s.fresh(t)
			data := append(allBytes(), payload(1<<20, 13)...)
			require.NoError(t, sb.WriteFileStream(ctx(t), "/workspace/bin", bytes.NewReader(data), int64(len(data))))
			require.Equal(t, sha(data), sha(readBack(t, sb, "/workspace/bin")))
		}},
		{"C-STREAM-1/at-cap-payloads", func(t *testing.T, s *suite) {
			sb := s.fresh(t)
			data := payload(sandbox.MaxFileBytes, 17)
			require.NoError(t, sb.WriteFileStream(ctx(t), "/workspace/cap", bytes.NewReader(data), int64(len(data))))
			require.Equal(t, sha(data), sha(readBack(t, sb, "/workspace/cap")), "ReadFile reads an at-cap file whole")
			_, err := sb.ReadFile(ctx(t), "/workspace/cap-plus-one")
			require.ErrorIs(t, err, sandbox.ErrFileNotExist)
			one := payload(sandbox.MaxFileBytes+1, 17)
			require.NoError(t, sb.WriteFileStream(ctx(t), "/workspace/cap-plus-one", bytes.NewReader(one), int64(len(one))))
			_, err = sb.ReadFile(ctx(t), "/workspace/cap-plus-one")
			require.ErrorIs(t, err, sandbox.ErrFileTooLarge)
		}},
		{"C-STREAM-1/64MiB-round-trip", func(t *testing.T, s *suite) {
			sb := s.fresh(t)
			const size = 64 << 20
			h := sha256.New()
			src := io.TeeReader(newGenReader(size, 19), h)
			require.NoError(t, sb.WriteFileStream(ctx(t), "/workspace/huge", src, size))
			want := hex.EncodeToString(h.Sum(nil))
			got := sh(t, sb, "sha256sum < /workspace/huge")
			require.Equal(t, want, got[:64])
		}},
	}
}

// wrongLength streams have bytes announced as size over an existing and a
// new target: an error, the old content kept, nothing new, no residue.
func wrongLength(t *testing.T, sb ports.Sandbox, have, size int) {
	t.Helper()
	require.NoError(t, sb.WriteFile(ctx(t), "/workspace/kept", []byte("old")))
	err := sb.WriteFileStream(ctx(t), "/workspace/kept", bytes.NewReader(payload(have, 1)), int64(size))
	require.Error(t, err, "%d bytes announced as %d", have, size)
	require.Equal(t, "old", string(readBack(t, sb, "/workspace/kept")))
	err = sb.WriteFileStream(ctx(t), "/workspace/new-"+strconv.Itoa(have), bytes.NewReader(payload(have, 1)), int64(size))
	require.Error(t, err)
	requireTarget(t, sb, "/workspace/new-"+strconv.Itoa(have), "")
	noResidue(t, sb)
}
