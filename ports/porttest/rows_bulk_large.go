package porttest

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/sandbox"
)

// largeMember makes a batch larger than the size from which a backend may
// carry a batch by another transport (Docker over the agent: its archive
// endpoint above 16 MiB in all, or from 2,000 members): the C-BULK
// promises hold there too.
func largeMember() sandbox.FileWrite {
	return sandbox.FileWrite{Path: "/workspace/big", Data: payload(16<<20+4096, 29)}
}

// largeBulkRows: WriteFiles of large batches (C-BULK-1..2, B-7).
func largeBulkRows() []row {
	return []row{
		{"C-BULK-1/large-batch-modes-owner-outside-workdir", func(t *testing.T, s *suite) {
			sb := s.nonRoot(t)
			uid := strconv.FormatInt(mustUID(t, sb), 10)
			sh(t, sb, "printf old > /workspace/run.sh && chmod 4750 /workspace/run.sh")
			big := largeMember()
			require.NoError(t, sb.WriteFiles(ctx(t), []sandbox.FileWrite{
				{Path: "/workspace/run.sh", Data: []byte("#!/bin/bash\necho ok\n")},
				big,
				{Path: "/workspace/new/deep/f", Data: allBytes()},
				{Path: "/tmp/bulk-large", Data: []byte("t")},
			}))
			for p, want := range map[string]string{
				"/workspace/run.sh": "4750 " + uid, "/workspace/big": "644 " + uid, "/workspace/new": "755 " + uid,
				"/workspace/new/deep/f": "644 " + uid, "/tmp/bulk-large": "644 " + uid,
			} {
				require.Equal(t, want, strings.TrimSpace(sh(t, sb, "stat -c '%a %u' "+q(p))), p)
			}
			require.Equal(t, sha(big.Data), sh(t, sb, "sha256sum < /workspace/big")[:64])
			require.Equal(t, allBytes(), readBack(t, sb, "/workspace/new/deep/f"))
			require.Equal(t, "t", string(readBack(t, sb, "/tmp/bulk-large")))
			noResidue(t, sb, "/workspace/new", "/workspace/new/deep", "/tmp")
		}},
		{"C-BULK-2/large-batch-directory-target-mid-batch", func(t *testing.T, s *suite) {
			sb := s.fresh(t)
			sh(t, sb, "mkdir -p /workspace/d && echo keep > /workspace/d/child")
			err := sb.WriteFiles(ctx(t), []sandbox.FileWrite{
				{Path: "/workspace/a", Data: []byte("a")}, largeMember(),
				{Path: "/workspace/d", Data: []byte("d")}, {Path: "/workspace/c", Data: []byte("c")},
			})
			require.ErrorIs(t, err, sandbox.ErrIsDirectory)
			require.ErrorContains(t, err, "/workspace/d")
			require.Equal(t, "a", string(readBack(t, sb, "/workspace/a")), "earlier members stay landed")
			require.False(t, exists(t, sb, "/workspace/c"), "later members are never written")
			require.Equal(t, "keep\n", string(readBack(t, sb, "/workspace/d/child")))
			requireWorkdir(t, sb, "a", "big", "d")
			noResidue(t, sb)
		}},
		{"C-BULK-2/large-batch-blocked-parent-lands-nothing", func(t *testing.T, s *suite) {
			sb := s.fresh(t)
			sh(t, sb, "printf blocker > /workspace/blk")
			err := sb.WriteFiles(ctx(t), []sandbox.FileWrite{
				{Path: "/workspace/a", Data: []byte("a")}, largeMember(), {Path: "/workspace/blk/deep/z", Data: []byte("z")},
			})
			require.ErrorIs(t, err, sandbox.ErrNotDirectory)
			require.ErrorContains(t, err, "/workspace/blk/")
			requireWorkdir(t, sb, "blk")
			noResidue(t, sb)
		}},
		{"C-BULK-2/large-batch-not-writable-lands-nothing", func(t *testing.T, s *suite) {
			sb := s.nonRoot(t)
			err := sb.WriteFiles(ctx(t), []sandbox.FileWrite{
				{Path: "/workspace/a", Data: []byte("a")}, largeMember(), {Path: "/etc/porttest-bulk", Data: []byte("x")},
			})
			requireNotWritable(t, err, "Permission denied")
			require.False(t, exists(t, sb, "/etc/porttest-bulk"))
			requireWorkdir(t, sb)
			noResidue(t, sb, "/etc")
		}},
	}
}
