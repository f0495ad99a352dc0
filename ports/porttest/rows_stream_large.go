package porttest

import (
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/sandbox"
)

// largeBody is above the sizes from which a backend may carry a body by
// another transport than small ones (Docker: its archive endpoint above 4
// MiB on the fallback, above 32 MiB over the agent): every C-STREAM-1
// promise holds there too.
const largeBody = 32<<20 + 4096

// largeStreamRows: WriteFileStream of large bodies (C-STREAM-1).
func largeStreamRows() []row {
	return []row{
		{"C-STREAM-1/large-short-long-source", func(t *testing.T, s *suite) {
			sb := s.fresh(t)
			wrongLength(t, sb, largeBody-1, largeBody)
			wrongLength(t, sb, 64<<10, largeBody)
			wrongLength(t, sb, largeBody+1, largeBody)
		}},
		// Refused with the right sentinel; where the backend stages large
		// writes, before a byte of the source is read.
		{"C-STREAM-1/large-refused-before-a-byte", func(t *testing.T, s *suite) {
			sb := s.nonRoot(t)
			sh(t, sb, "printf blocker > /workspace/blk && mkdir /workspace/dir")
			for p, want := range map[string]error{
				"/etc/porttest.conf": sandbox.ErrNotWritable,
				"/workspace/blk/x/f": sandbox.ErrNotDirectory,
				"/workspace/dir":     sandbox.ErrIsDirectory,
				"/dev/null":          sandbox.ErrNotReplaceable,
			} {
				var src io.Reader = failReader{t}
				if !s.h.Caps.StagesLargeWrites {
					src = newGenReader(largeBody, 5)
				}
				require.ErrorIs(t, sb.WriteFileStream(ctx(t), p, src, largeBody), want, p)
			}
			require.False(t, exists(t, sb, "/etc/porttest.conf"))
			noResidue(t, sb, "/etc")
		}},
		{"C-STREAM-1/large-mode-and-owner-kept", func(t *testing.T, s *suite) {
			sb := s.nonRoot(t)
			uid := strconv.FormatInt(mustUID(t, sb), 10)
			sh(t, sb, "printf old > /workspace/m && chmod 4750 /workspace/m")
			data := payload(largeBody, 23)
			require.NoError(t, sb.WriteFileStream(ctx(t), "/workspace/m", newGenReader(largeBody, 23), largeBody))
			require.Equal(t, "4750 "+uid, strings.TrimSpace(sh(t, sb, "stat -c '%a %u' /workspace/m")))
			require.NoError(t, sb.WriteFileStream(ctx(t), "/workspace/new/n", newGenReader(largeBody, 23), largeBody))
			require.Equal(t, "644 "+uid, strings.TrimSpace(sh(t, sb, "stat -c '%a %u' /workspace/new/n")))
			require.Equal(t, "755", statMode(t, sb, "/workspace/new"))
			got := sh(t, sb, "sha256sum < /workspace/m")
			require.Equal(t, sha(data), got[:64])
			noResidue(t, sb)
		}},
		{"C-STREAM-1/large-cancel-mid-upload", func(t *testing.T, s *suite) {
			cancelledWrite(t, s.fresh(t), 2<<20, largeBody, 10*time.Second)
		}},
	}
}
