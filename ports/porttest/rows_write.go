package porttest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/ports"
)

// writeRows: WriteFile's successful paths and its atomicity (C-WRITE-1..5).
func writeRows() []row {
	return []row{
		{"C-WRITE-1/overwrite-truncates", func(t *testing.T, s *suite) {
			sb := s.fresh(t)
			p := "/workspace/f"
			require.NoError(t, sb.WriteFile(ctx(t), p, bytes.Repeat([]byte("long "), 1000)))
			require.NoError(t, sb.WriteFile(ctx(t), p, []byte("short")))
			require.Equal(t, "short", string(readBack(t, sb, p)))
		}},
		{"C-WRITE-1/empty-data", func(t *testing.T, s *suite) {
			sb := s.fresh(t)
			require.NoError(t, sb.WriteFile(ctx(t), "/workspace/new-empty", nil))
			require.Equal(t, "regular empty file", fileType(t, sb, "/workspace/new-empty"))
			require.NoError(t, sb.WriteFile(ctx(t), "/workspace/was-full", []byte("full")))
			require.NoError(t, sb.WriteFile(ctx(t), "/workspace/was-full", []byte{}))
			require.Empty(t, readBack(t, sb, "/workspace/was-full"))
		}},
		{"C-WRITE-1/parents-created-0755", func(t *testing.T, s *suite) {
			sb := s.fresh(t)
			require.NoError(t, sb.WriteFile(ctx(t), "/workspace/a/b/c/f", []byte("deep")))
			for _, d := range []string{"/workspace/a", "/workspace/a/b", "/workspace/a/b/c"} {
				require.Equal(t, "755", statMode(t, sb, d), d)
			}
			require.Equal(t, "deep", string(readBack(t, sb, "/workspace/a/b/c/f")))
			// Outside the workdir too.
			require.NoError(t, sb.WriteFile(ctx(t), "/opt/porttest/new/f", []byte("x")))
			require.Equal(t, "755", statMode(t, sb, "/opt/porttest/new"))
		}},
		{"C-WRITE-1/binary-and-at-cap-payloads", func(t *testing.T, s *suite) {
			sb := s.fresh(t)
			require.NoError(t, sb.WriteFile(ctx(t), "/workspace/bytes", allBytes()))
			require.Equal(t, allBytes(), readBack(t, sb, "/workspace/bytes"))
			big := payload(sandbox.MaxFileBytes, 3)
			require.NoError(t, sb.WriteFile(ctx(t), "/workspace/at-cap", big))
			require.Equal(t, sha(big), sha(readBack(t, sb, "/workspace/at-cap")))
			require.NoError(t, sb.WriteFile(ctx(t), "/workspace/above-cap", payload(sandbox.MaxFileBytes+1, 4)),
				"the read cap does not bound writes")
			require.Equal(t, "4194305\n", sh(t, sb, "stat -c %s /workspace/above-cap"))
		}},
		{"C-WRITE-2/temp-beside-target-then-rename", func(t *testing.T, s *suite) {
			sb := s.fresh(t)
			dir, p := "/workspace/atomic", "/workspace/atomic/target"
			require.NoError(t, sb.WriteFile(ctx(t), p, []byte("old")))
			g := newGateReader(t, 64<<10, 128<<10)
			done := make(chan error, 1)
			c := ctx(t)
			go func() { done <- sb.WriteFileStream(c, p, g, 128<<10) }()
			g.waitHalf(t)
			var names []string
			eventually(t, 10*time.Second, func() bool {
				names = strings.Fields(sh(t, sb, "ls -A "+q(dir)))
				return len(names) == 2
			}, "the temporary file never appeared beside the target")
			require.Equal(t, "old", string(readBack(t, sb, p)), "the target changed before the rename")
			tmp := names[0]
			if tmp == "target" {
				tmp = names[1]
			}
			require.Regexp(t, tempName, tmp)
			require.Equal(t, path.Join(dir, tmp), residue(t, sb, dir), "the residue check must see a write in flight")
			g.release()
			require.NoError(t, <-done)
			require.Equal(t, sha(payload(128<<10, 9)), sha(readBack(t, sb, p)))
			require.Equal(t, []string{"target"}, strings.Fields(sh(t, sb, "ls -A "+q(dir))))
		}},
		{"C-WRITE-2/failed-transfer-leaves-target", func(t *testing.T, s *suite) {
			sb := s.fresh(t)
			for _, c := range []struct{ p, old string }{{"/workspace/fail-existing", "old"}, {"/workspace/fail-new", ""}} {
				p, old := c.p, c.old
				if old != "" {
					require.NoError(t, sb.WriteFile(ctx(t), p, []byte(old)))
				}
				src := &errAfterReader{r: io.LimitReader(newGenReader(1<<20, 1), 100<<10), err: io.ErrClosedPipe}
				err := sb.WriteFileStream(ctx(t), p, src, 200<<10)
				require.Error(t, err)
				requireTarget(t, sb, p, old)
				noResidue(t, sb)
			}
		}},
		{"C-WRITE-2/cancelled-transfer-leaves-target", func(t *testing.T, s *suite) {
			cancelledWrite(t, s.fresh(t), 64<<10, 128<<10, 5*time.Second)
		}},
		{"C-WRITE-3/symlink-replaced-pointee-untouched", func(t *testing.T, s *suite) {
			sb := s.fresh(t)
			sh(t, sb, "printf pointee > /workspace/pointee && ln -s pointee /workspace/link && ln -s /no/where /workspace/dangling")
			for _, p := range []string{"/workspace/link", "/workspace/dangling"} {
				require.NoError(t, sb.WriteFile(ctx(t), p, []byte("replaced")))
				require.Equal(t, "regular file", fileType(t, sb, p))
				require.Equal(t, "644", statMode(t, sb, p))
				require.Equal(t, "replaced", string(readBack(t, sb, p)))
			}
			require.Equal(t, "pointee", string(readBack(t, sb, "/workspace/pointee")))
			require.False(t, exists(t, sb, "/no/where"))
		}},
		{"C-WRITE-3/symlink-to-dir-is-directory", func(t *testing.T, s *suite) {
			sb := s.fresh(t)
			sh(t, sb, "mkdir /workspace/d && echo keep > /workspace/d/child && ln -s d /workspace/dlink")
			failWrite(t, sb, "/workspace/dlink", []byte("x"), sandbox.ErrIsDirectory)
			require.Equal(t, "symbolic link", fileType(t, sb, "/workspace/dlink"))
			require.Equal(t, "keep\n", string(readBack(t, sb, "/workspace/d/child")))
		}},
		{"C-WRITE-4/directory-target-intact", func(t *testing.T, s *suite) {
			sb := s.fresh(t)
			sh(t, sb, "mkdir -p /workspace/d/sub && echo keep > /workspace/d/sub/child")
			failWrite(t, sb, "/workspace/d", []byte("x"), sandbox.ErrIsDirectory)
			failWrite(t, sb, "/workspace/d/sub", bytes.Repeat([]byte("z"), 256<<10), sandbox.ErrIsDirectory)
			require.Equal(t, "directory", fileType(t, sb, "/workspace/d"))
			require.Equal(t, "keep\n", string(readBack(t, sb, "/workspace/d/sub/child")))
		}},
		{"C-WRITE-4/root-is-directory", func(t *testing.T, s *suite) {
			sb := s.fresh(t)
			require.ErrorIs(t, sb.WriteFile(ctx(t), "/", []byte("x")), sandbox.ErrIsDirectory)
		}},
		{"C-WRITE-5/new-file-0644", func(t *testing.T, s *suite) {
			sb := s.fresh(t)
			require.NoError(t, sb.WriteFile(ctx(t), "/workspace/new", []byte("x")))
			require.Equal(t, "644", statMode(t, sb, "/workspace/new"))
			// Whatever the umask of the sandbox's own shells.
			sh(t, sb, "mkdir -m 0777 /workspace/open")
			require.NoError(t, sb.WriteFile(ctx(t), "/workspace/open/new", []byte("x")))
			require.Equal(t, "644", statMode(t, sb, "/workspace/open/new"))
		}},
		{"C-WRITE-5/existing-mode-kept", func(t *testing.T, s *suite) {
			sb := s.fresh(t)
			modeKept(t, sb)
		}},
		{"B-7/non-root-keeps-mode", func(t *testing.T, s *suite) {
			sb := s.nonRoot(t)
			require.Equal(t, s.h.NonRootUID, mustUID(t, sb))
			modeKept(t, sb)
			require.NoError(t, sb.WriteFile(ctx(t), "/workspace/new", []byte("x")))
			require.Equal(t, "644", statMode(t, sb, "/workspace/new"))
		}},
	}
}

// tempName is the shape of a temporary write file (CONTRACT §0).
var tempName = regexp.MustCompile(`^` + regexp.QuoteMeta(sandbox.TempPrefix) + `[0-9a-f]{16}$`)

// modeKept rewrites 0755 and 0600 files and requires their modes kept
// (C-WRITE-5, B-7); the script still runs after its rewrite.
func modeKept(t *testing.T, sb ports.Sandbox) {
	t.Helper()
	sh(t, sb, "printf 'echo old' > /workspace/run.sh && chmod 0755 /workspace/run.sh && printf s > /workspace/secret && chmod 0600 /workspace/secret")
	require.NoError(t, sb.WriteFile(ctx(t), "/workspace/run.sh", []byte("#!/bin/bash\necho rewritten\n")))
	require.Equal(t, "755", statMode(t, sb, "/workspace/run.sh"))
	require.Equal(t, "rewritten\n", sh(t, sb, "/workspace/run.sh"))
	require.NoError(t, sb.WriteFileStream(ctx(t), "/workspace/secret", strings.NewReader("new secret"), 10))
	require.Equal(t, "600", statMode(t, sb, "/workspace/secret"))
	require.Equal(t, "new secret", string(readBack(t, sb, "/workspace/secret")))
}

// failWrite writes data to p with WriteFile and then WriteFileStream,
// requiring want from both and no temporary residue after either.
func failWrite(t *testing.T, sb ports.Sandbox, p string, data []byte, want error) {
	t.Helper()
	err := sb.WriteFile(ctx(t), p, data)
	require.ErrorIs(t, err, want, "WriteFile(%q)", p)
	noResidue(t, sb, path.Dir(p))
	err = sb.WriteFileStream(ctx(t), p, bytes.NewReader(data), int64(len(data)))
	require.ErrorIs(t, err, want, "WriteFileStream(%q)", p)
	noResidue(t, sb, path.Dir(p))
}

// requireTarget requires p to hold want, or to be absent when want is "".
func requireTarget(t *testing.T, sb ports.Sandbox, p, want string) {
	t.Helper()
	if want == "" {
		require.False(t, exists(t, sb, p), "%s was created by a failed write", p)
		return
	}
	require.Equal(t, want, string(readBack(t, sb, p)), "%s changed by a failed write", p)
}

// mustUID returns `id -u` inside the sandbox.
func mustUID(t *testing.T, sb ports.Sandbox) int64 {
	t.Helper()
	var uid int64
	_, err := fmt.Sscan(strings.TrimSpace(sh(t, sb, "id -u")), &uid)
	require.NoError(t, err)
	return uid
}

// gateReader yields a deterministic payload of size bytes but stops after
// half bytes until released, so a row can look at a write in flight.
type gateReader struct {
	r          io.Reader
	half, read int
	halfOnce   sync.Once
	atHalf     chan struct{}
	open       chan struct{}
	openOnce   sync.Once
}

func newGateReader(t *testing.T, half, size int) *gateReader {
	g := &gateReader{r: bytes.NewReader(payload(size, 9)), half: half,
		atHalf: make(chan struct{}), open: make(chan struct{})}
	t.Cleanup(g.release) // never leave a writer blocked on a failed row
	return g
}

func (g *gateReader) Read(p []byte) (int, error) {
	if g.read >= g.half {
		g.halfOnce.Do(func() { close(g.atHalf) })
		<-g.open
	} else if len(p) > g.half-g.read {
		p = p[:g.half-g.read]
	}
	n, err := g.r.Read(p)
	g.read += n
	return n, err
}

func (g *gateReader) waitHalf(t *testing.T) {
	t.Helper()
	select {
	case <-g.atHalf:
	case <-time.After(30 * time.Second):
		t.Fatal("the write never read half of its source")
	}
}

func (g *gateReader) release() { g.openOnce.Do(func() { close(g.open) }) }

// cancelledWrite cancels a stream of size bytes onto an existing target once
// half of its source was read: the call returns within wait, the target
// keeps its content, and no temporary file outlives the call for long.
func cancelledWrite(t *testing.T, sb ports.Sandbox, half, size int, wait time.Duration) {
	t.Helper()
	p := "/workspace/cancelled"
	require.NoError(t, sb.WriteFile(ctx(t), p, []byte("old")))
	g := newGateReader(t, half, size)
	c, cancel := context.WithCancel(ctx(t))
	done := make(chan error, 1)
	go func() { done <- sb.WriteFileStream(c, p, g, int64(size)) }()
	g.waitHalf(t)
	cancel()
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(wait):
		t.Fatal("a cancelled write did not return")
	}
	g.release()
	require.Equal(t, "old", string(readBack(t, sb, p)))
	eventually(t, wait, func() bool {
		return strings.TrimSpace(sh(t, sb, "ls -A /workspace")) == "cancelled"
	}, "the temporary file of a cancelled write was left behind")
}
