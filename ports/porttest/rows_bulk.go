package porttest

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/ports"
)

// bulkRows: WriteFiles (C-BULK-1..3).
func bulkRows() []row {
	return []row{
		{"C-BULK-1/empty-batch", func(t *testing.T, s *suite) {
			sb := s.fresh(t)
			require.NoError(t, sb.WriteFiles(ctx(t), nil))
			require.NoError(t, sb.WriteFiles(ctx(t), []sandbox.FileWrite{}))
			requireWorkdir(t, sb)
		}},
		{"C-BULK-1/invalid-member-paths", func(t *testing.T, s *suite) {
			sb := s.fresh(t)
			for _, bad := range []string{"", "relative/x", "/workspace/../x", "/workspace/a/", "/workspace//a",
				"/workspace/./a", "/", "/workspace/a\x00b"} {
				err := sb.WriteFiles(ctx(t), []sandbox.FileWrite{
					{Path: "/workspace/good", Data: []byte("x")},
					{Path: bad, Data: []byte("y")},
				})
				require.Error(t, err, "member path %q", bad)
				requireWorkdir(t, sb) // refused before delivery: nothing landed
			}
			noResidue(t, sb)
		}},
		{"C-BULK-1/bytes-parents-modes", func(t *testing.T, s *suite) {
			sb := s.fresh(t)
			sh(t, sb, "printf old > /workspace/exec.sh && chmod 0755 /workspace/exec.sh && printf old > /workspace/private && chmod 0700 /workspace/private")
			bin := payload(200<<10, 23)
			require.NoError(t, sb.WriteFiles(ctx(t), []sandbox.FileWrite{
				{Path: "/workspace/new/deep/bin", Data: bin},
				{Path: "/workspace/new/empty", Data: nil},
				{Path: "/workspace/exec.sh", Data: []byte("#!/bin/bash\necho bulk\n")},
				{Path: "/workspace/private", Data: []byte("new")},
				{Path: "/workspace/all-bytes", Data: allBytes()},
			}))
			require.Equal(t, sha(bin), sha(readBack(t, sb, "/workspace/new/deep/bin")))
			require.Empty(t, readBack(t, sb, "/workspace/new/empty"))
			require.Equal(t, allBytes(), readBack(t, sb, "/workspace/all-bytes"))
			for p, mode := range map[string]string{
				"/workspace/new": "755", "/workspace/new/deep": "755",
				"/workspace/new/deep/bin": "644", "/workspace/new/empty": "644", "/workspace/all-bytes": "644",
				"/workspace/exec.sh": "755", "/workspace/private": "700",
			} {
				require.Equal(t, mode, statMode(t, sb, p), p)
			}
			require.Equal(t, "bulk\n", sh(t, sb, "/workspace/exec.sh"))
			requireWorkdir(t, sb, "all-bytes", "exec.sh", "new", "private")
			noResidue(t, sb, "/workspace/new", "/workspace/new/deep")
		}},
		{"C-BULK-1/duplicates-last-wins", func(t *testing.T, s *suite) {
			sb := s.fresh(t)
			require.NoError(t, sb.WriteFiles(ctx(t), []sandbox.FileWrite{
				{Path: "/workspace/dup", Data: []byte("first")},
				{Path: "/workspace/other", Data: []byte("o")},
				{Path: "/workspace/dup", Data: []byte("second")},
				{Path: "/workspace/dup", Data: []byte("third")},
			}))
			require.Equal(t, "third", string(readBack(t, sb, "/workspace/dup")))
			requireWorkdir(t, sb, "dup", "other")
			noResidue(t, sb)
		}},
		{"C-BULK-1/outside-workdir", func(t *testing.T, s *suite) {
			sb := s.fresh(t)
			require.NoError(t, sb.WriteFiles(ctx(t), []sandbox.FileWrite{
				{Path: "/tmp/bulk-tmp", Data: []byte("t")},
				{Path: "/opt/bulk/x", Data: []byte("o")},
				{Path: "/workspace/odd name\nwith newline", Data: []byte("n")},
			}))
			require.Equal(t, "t", string(readBack(t, sb, "/tmp/bulk-tmp")))
			require.Equal(t, "o", string(readBack(t, sb, "/opt/bulk/x")))
			require.Equal(t, "n", string(readBack(t, sb, "/workspace/odd name\nwith newline")))
			noResidue(t, sb, "/opt/bulk")
		}},
		{"C-BULK-2/directory-target-mid-batch", func(t *testing.T, s *suite) {
			sb := s.fresh(t)
			sh(t, sb, "mkdir -p /workspace/d && echo keep > /workspace/d/child")
			err := sb.WriteFiles(ctx(t), []sandbox.FileWrite{
				{Path: "/workspace/a", Data: []byte("a")},
				{Path: "/workspace/d", Data: []byte("d")},
				{Path: "/workspace/c", Data: []byte("c")},
			})
			require.ErrorIs(t, err, sandbox.ErrIsDirectory)
			require.ErrorContains(t, err, "/workspace/d", "the error names the failing member")
			require.Equal(t, "a", string(readBack(t, sb, "/workspace/a")), "earlier members stay landed")
			require.False(t, exists(t, sb, "/workspace/c"), "later members are never written")
			require.Equal(t, "keep\n", string(readBack(t, sb, "/workspace/d/child")))
			requireWorkdir(t, sb, "a", "d")
			noResidue(t, sb)
		}},
		{"C-BULK-2/blocked-parent-lands-nothing", func(t *testing.T, s *suite) {
			sb := s.fresh(t)
			sh(t, sb, "printf blocker > /workspace/blk")
			for _, batch := range [][]sandbox.FileWrite{
				{{Path: "/workspace/a", Data: []byte("a")}, {Path: "/workspace/c", Data: []byte("c")}, {Path: "/workspace/blk/x", Data: []byte("x")}},
				{{Path: "/workspace/blk/x/y", Data: []byte("x")}, {Path: "/workspace/a", Data: []byte("a")}},
				{{Path: "/workspace/a", Data: []byte("a")}, {Path: "/workspace/blk/deep/er/z", Data: []byte("z")}, {Path: "/workspace/c", Data: []byte("c")}},
			} {
				err := sb.WriteFiles(ctx(t), batch)
				require.ErrorIs(t, err, sandbox.ErrNotDirectory)
				require.ErrorContains(t, err, "/workspace/blk/")
				requireWorkdir(t, sb, "blk")
				require.Equal(t, "blocker", string(readBack(t, sb, "/workspace/blk")))
				noResidue(t, sb)
			}
		}},
		{"C-BULK-3/ten-thousand-files", func(t *testing.T, s *suite) {
			// In tree order, as a walk of a skill's directory yields them.
			tenThousand(t, s, func(i int) string { return fmt.Sprintf("/workspace/skill/d%02d/f%04d.txt", i/100, i) })
		}},
		{"C-BULK-3/ten-thousand-files-interleaved-dirs", func(t *testing.T, s *suite) {
			// The same tree with consecutive members in different directories:
			// the cost must not depend on the order.
			tenThousand(t, s, func(i int) string { return fmt.Sprintf("/workspace/skill/d%02d/f%04d.txt", i%100, i) })
		}},
		{"B-7/non-root-bulk-keeps-mode", func(t *testing.T, s *suite) {
			sb := s.nonRoot(t)
			sh(t, sb, "printf old > /workspace/run.sh && chmod 0755 /workspace/run.sh")
			require.NoError(t, sb.WriteFiles(ctx(t), []sandbox.FileWrite{
				{Path: "/workspace/run.sh", Data: []byte("#!/bin/bash\necho ok\n")},
				{Path: "/workspace/sub/new", Data: []byte("n")},
			}))
			require.Equal(t, "755", statMode(t, sb, "/workspace/run.sh"))
			require.Equal(t, "644", statMode(t, sb, "/workspace/sub/new"))
			require.Equal(t, "755", statMode(t, sb, "/workspace/sub"))
			require.Equal(t, "ok\n", sh(t, sb, "/workspace/run.sh"))
		}},
	}
}

// tenThousand writes a 10,000-member batch named by name(i) under
// /workspace/skill and checks it landed (C-BULK-3).
func tenThousand(t *testing.T, s *suite, name func(int) string) {
	t.Helper()
	sb := s.fresh(t)
	const n = 10000
	files := make([]sandbox.FileWrite, n)
	for i := range files {
		files[i] = sandbox.FileWrite{Path: name(i), Data: []byte(fmt.Sprintf("file %d\n", i))}
	}
	start := time.Now()
	require.NoError(t, sb.WriteFiles(ctx(t), files))
	t.Logf("10,000-file batch took %v", time.Since(start))
	require.Equal(t, "10000\n", sh(t, sb, "find /workspace/skill -type f | wc -l"))
	for _, i := range []int{0, 4711, n - 1} {
		require.Equal(t, fmt.Sprintf("file %d\n", i), string(readBack(t, sb, files[i].Path)))
	}
	require.Equal(t, "644", statMode(t, sb, files[n-1].Path))
	requireWorkdir(t, sb, "skill")
	noResidue(t, sb)
}

// requireWorkdir requires the workdir to hold exactly names: a bulk write
// leaves neither members it must not land nor its manifest or dir list.
func requireWorkdir(t *testing.T, sb ports.Sandbox, names ...string) {
	t.Helper()
	out := sh(t, sb, `cd /workspace && for f in * .[!.]* ..?*; do [ -e "$f" ] || [ -L "$f" ] && printf '%s\0' "$f"; done; true`)
	got := strings.Split(strings.TrimSuffix(out, "\x00"), "\x00")
	if out == "" {
		got = nil
	}
	sort.Strings(got)
	want := append([]string(nil), names...)
	sort.Strings(want)
	require.Equal(t, want, got, "entries of /workspace")
}
