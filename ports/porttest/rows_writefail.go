package porttest

import (
	"bytes"
	"context"
	"path"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/ports"
)

// writeFailRows: the refusals of WriteFile and WriteFileStream
// (C-WRITE-6..8); every one ends with a residue check.
func writeFailRows() []row {
	return []row{
		{"C-WRITE-6/dev-null", func(t *testing.T, s *suite) {
			unreplaceableDevNull(t, s.fresh(t))
		}},
		{"C-WRITE-6/etc-hosts", func(t *testing.T, s *suite) {
			unreplaceableHosts(t, s.fresh(t))
		}},
		{"C-WRITE-6/read-only-root", func(t *testing.T, s *suite) {
			sb := s.provision(t, sandbox.Spec{Hardening: sandbox.Hardening{ReadOnlyRootfs: true}})
			unreplaceableDevNull(t, sb)
			unreplaceableHosts(t, sb)
		}},
		{"C-WRITE-6/non-root", func(t *testing.T, s *suite) {
			sb := s.nonRoot(t)
			unreplaceableDevNull(t, sb)
			unreplaceableHosts(t, sb)
		}},
		{"C-WRITE-7/blocker-depth-1", func(t *testing.T, s *suite) {
			sb := s.fresh(t)
			sh(t, sb, "printf blocker > /workspace/blk")
			failWrite(t, sb, "/workspace/blk/f", []byte("x"), sandbox.ErrNotDirectory)
			require.Equal(t, "blocker", string(readBack(t, sb, "/workspace/blk")))
		}},
		{"C-WRITE-7/blocker-depth-2", func(t *testing.T, s *suite) {
			sb := s.fresh(t)
			sh(t, sb, "printf blocker > /workspace/blk")
			failWrite(t, sb, "/workspace/blk/x/f", []byte("x"), sandbox.ErrNotDirectory)
			require.Equal(t, "blocker", string(readBack(t, sb, "/workspace/blk")))
			require.Equal(t, "regular file", fileType(t, sb, "/workspace/blk"))
		}},
		{"C-WRITE-7/refused-256KiB-body-no-hang", func(t *testing.T, s *suite) {
			sb := s.fresh(t)
			sh(t, sb, "printf blocker > /workspace/blk")
			const size = 256 << 10
			for _, p := range []string{"/workspace/blk/f", "/workspace/blk/x/f"} {
				c, cancel := context.WithTimeout(ctx(t), 30*time.Second)
				start := time.Now()
				err := sb.WriteFileStream(c, p, newGenReader(size, 5), size)
				cancel()
				require.ErrorIs(t, err, sandbox.ErrNotDirectory, "stream to %s", p)
				require.Less(t, time.Since(start), 10*time.Second, "a refused body must be drained, not hang")
				start = time.Now()
				require.ErrorIs(t, sb.WriteFile(ctx(t), p, payload(size, 5)), sandbox.ErrNotDirectory)
				require.Less(t, time.Since(start), 10*time.Second)
				noResidue(t, sb)
			}
			require.Equal(t, "blocker", string(readBack(t, sb, "/workspace/blk")))
		}},
		{"C-WRITE-8/read-only-root-outside-writable-paths", func(t *testing.T, s *suite) {
			sb := s.provision(t, sandbox.Spec{Hardening: sandbox.Hardening{ReadOnlyRootfs: true}})
			for _, p := range []string{"/opt/x", "/etc/porttest.conf", "/newdir/x", "/opt/a/b/c"} {
				failNotWritable(t, sb, p, "Read-only file system")
			}
			require.False(t, exists(t, sb, "/newdir"), "a parent was made on a read-only root")
		}},
		{"C-WRITE-8/non-root-root-owned-parent", func(t *testing.T, s *suite) {
			sb := s.nonRoot(t)
			for _, p := range []string{"/etc/porttest.conf", "/usr/local/newdir/x", "/root-owned-new/x"} {
				failNotWritable(t, sb, p, "Permission denied")
			}
			// Positive control: the user's own workdir takes the write.
			require.NoError(t, sb.WriteFile(ctx(t), "/workspace/mine", []byte("ok")))
		}},
	}
}

// unreplaceableDevNull: /dev/null refused, still the character device.
func unreplaceableDevNull(t *testing.T, sb ports.Sandbox) {
	t.Helper()
	failWrite(t, sb, "/dev/null", []byte("x"), sandbox.ErrNotReplaceable)
	require.Equal(t, "character special file", fileType(t, sb, "/dev/null"))
}

// unreplaceableHosts: a bind-mounted /etc/hosts refused, still mounted and
// unchanged.
func unreplaceableHosts(t *testing.T, sb ports.Sandbox) {
	t.Helper()
	const mounted = `grep -c ' /etc/hosts ' /proc/self/mountinfo`
	require.Equal(t, "1\n", sh(t, sb, mounted), "the image's /etc/hosts must be a bind mount for this row")
	before := sh(t, sb, "sha256sum /etc/hosts")
	failWrite(t, sb, "/etc/hosts", []byte("127.0.0.1 evil\n"), sandbox.ErrNotReplaceable)
	require.Equal(t, before, sh(t, sb, "sha256sum /etc/hosts"))
	require.Equal(t, "1\n", sh(t, sb, mounted))
}

// failNotWritable requires both single writes of p to fail with a
// *PathNotWritableError carrying reason, leaving nothing behind.
func failNotWritable(t *testing.T, sb ports.Sandbox, p, reason string) {
	t.Helper()
	requireNotWritable(t, sb.WriteFile(ctx(t), p, []byte("x")), reason)
	noResidue(t, sb, path.Dir(p))
	requireNotWritable(t, sb.WriteFileStream(ctx(t), p, bytes.NewReader(bytes.Repeat([]byte("y"), 64<<10)), 64<<10), reason)
	noResidue(t, sb, path.Dir(p))
	require.False(t, exists(t, sb, p), "%s was created", p)
}
