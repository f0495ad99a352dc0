package porttest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/ports"
)

// readFixtures makes every kind of path a read can meet, under /workspace/r.
var readFixtures = `set -e
mkdir -p /workspace/r/dir /workspace/r/blk2
` + octalPrintf(allBytes()) + ` > /workspace/r/all-bytes
: > /workspace/r/empty
mkfifo /workspace/r/fifo
perl -MSocket -e 'socket(my $s, PF_UNIX, SOCK_STREAM, 0) or die $!; bind($s, pack_sockaddr_un("/workspace/r/sock")) or die $!'
printf 'pointee' > /workspace/r/pointee
ln -s pointee /workspace/r/link-file
ln -s /no/such/thing /workspace/r/link-dangling
ln -s dir /workspace/r/link-dir
printf 'blocker' > /workspace/r/blk
printf 'blocker' > /workspace/r/blk2/file
`

// readCase is one path, a row name for it, and the sentinel reading it
// must answer.
type readCase struct {
	name, path string
	want       error
}

// readFaults are the refusals of C-READ-1, shared by ReadFile and
// ReadFileStream (C-READ-2: the same sentinels).
var readFaults = []readCase{
	{"missing", "/workspace/r/missing", sandbox.ErrFileNotExist},
	{"missing-parent", "/workspace/r/missing-dir/x", sandbox.ErrFileNotExist},
	{"directory", "/workspace/r/dir", sandbox.ErrIsDirectory},
	{"fifo", "/workspace/r/fifo", sandbox.ErrNotRegularFile},
	{"socket", "/workspace/r/sock", sandbox.ErrNotRegularFile},
	{"device", "/dev/null", sandbox.ErrNotRegularFile},
	{"symlink-to-file", "/workspace/r/link-file", sandbox.ErrNotRegularFile},
	{"dangling-symlink", "/workspace/r/link-dangling", sandbox.ErrNotRegularFile},
	// A symlink to a directory is a directory to every question asked of a
	// path (seed: WriteFile; core's read script answers the same).
	{"symlink-to-dir", "/workspace/r/link-dir", sandbox.ErrIsDirectory},
	{"blocked-parent-depth-1", "/workspace/r/blk/x", sandbox.ErrNotDirectory},
	{"blocked-parent-depth-2", "/workspace/r/blk/x/y", sandbox.ErrNotDirectory},
	{"blocked-parent-deep", "/workspace/r/blk2/file/x/y", sandbox.ErrNotDirectory},
}

// readRows: ReadFile and ReadFileStream (CONTRACT §6).
func readRows() []row {
	rows := []row{
		{"C-READ-1/binary-verbatim", func(t *testing.T, s *suite) {
			sb := readSandbox(t, s)
			require.Equal(t, allBytes(), readBack(t, sb, "/workspace/r/all-bytes"))
		}},
		{"C-READ-1/empty-file", func(t *testing.T, s *suite) {
			sb := readSandbox(t, s)
			b, err := sb.ReadFile(ctx(t), "/workspace/r/empty")
			require.NoError(t, err)
			require.Empty(t, b)
		}},
		{"C-READ-1/exactly-max-reads-whole", func(t *testing.T, s *suite) {
			sb := s.fresh(t)
			sum := makeRandomFile(t, sb, "/workspace/max", sandbox.MaxFileBytes)
			b := readBack(t, sb, "/workspace/max")
			require.Len(t, b, sandbox.MaxFileBytes)
			require.Equal(t, sum, sha(b))
		}},
		{"C-READ-1/above-max-too-large", func(t *testing.T, s *suite) {
			sb := s.fresh(t)
			makeRandomFile(t, sb, "/workspace/big", sandbox.MaxFileBytes+1)
			b, err := sb.ReadFile(ctx(t), "/workspace/big")
			require.ErrorIs(t, err, sandbox.ErrFileTooLarge)
			require.Nil(t, b, "refuse, never truncate")
		}},
		{"C-READ-1/paths-are-not-interpreted", func(t *testing.T, s *suite) {
			sb := s.fresh(t)
			for _, name := range []string{"-dash", "sp ace", "new\nline", "$(touch pwned)", "quo'te\"s", "*"} {
				p := "/workspace/" + name
				require.NoError(t, sb.WriteFile(ctx(t), p, []byte(name)))
				require.Equal(t, name, string(readBack(t, sb, p)))
			}
			require.False(t, exists(t, sb, "/workspace/pwned"), "a path was run as shell text")
		}},
		{"C-READ-2/stream-exact-size", func(t *testing.T, s *suite) {
			sb := readSandbox(t, s)
			rc, n, err := sb.ReadFileStream(ctx(t), "/workspace/r/all-bytes", 256)
			require.NoError(t, err, "maxBytes equal to the size is allowed")
			require.Equal(t, int64(256), n)
			b, err := io.ReadAll(rc)
			require.NoError(t, err)
			require.NoError(t, rc.Close())
			require.Equal(t, allBytes(), b)
		}},
		{"C-READ-2/stream-empty-file", func(t *testing.T, s *suite) {
			sb := readSandbox(t, s)
			rc, n, err := sb.ReadFileStream(ctx(t), "/workspace/r/empty", 0)
			require.NoError(t, err)
			require.Zero(t, n)
			b, err := io.ReadAll(rc)
			require.NoError(t, err)
			require.NoError(t, rc.Close())
			require.Empty(t, b)
		}},
		{"C-READ-2/stream-above-max-refused", func(t *testing.T, s *suite) {
			sb := readSandbox(t, s)
			rc, _, err := sb.ReadFileStream(ctx(t), "/workspace/r/all-bytes", 255)
			require.ErrorIs(t, err, sandbox.ErrFileTooLarge)
			require.Nil(t, rc, "refused before any byte travels")
		}},
		{"C-READ-2/stream-64MiB", func(t *testing.T, s *suite) {
			sb := s.fresh(t)
			const size = 64 << 20
			sum := makeRandomFile(t, sb, "/workspace/huge", size)
			rc, n, err := sb.ReadFileStream(ctx(t), "/workspace/huge", size)
			require.NoError(t, err)
			require.Equal(t, int64(size), n)
			h := sha256.New()
			copied, err := io.Copy(h, rc)
			require.NoError(t, err)
			require.NoError(t, rc.Close())
			require.Equal(t, int64(size), copied)
			require.Equal(t, sum, hex.EncodeToString(h.Sum(nil)))
		}},
		{"C-READ-2/stream-early-close", func(t *testing.T, s *suite) {
			sb := s.fresh(t)
			makeRandomFile(t, sb, "/workspace/partial", 8<<20)
			rc, _, err := sb.ReadFileStream(ctx(t), "/workspace/partial", 8<<20)
			require.NoError(t, err)
			_, err = io.ReadFull(rc, make([]byte, 4096))
			require.NoError(t, err)
			require.NoError(t, rc.Close(), "closing a stream part way is allowed")
			require.Equal(t, "usable\n", sh(t, sb, "echo usable"))
		}},
	}
	for _, c := range readFaults {
		rows = append(rows, row{"C-READ-1/" + c.name, func(t *testing.T, s *suite) {
			sb := readSandbox(t, s)
			b, err := sb.ReadFile(ctx(t), c.path)
			require.ErrorIs(t, err, c.want, "ReadFile(%q)", c.path)
			require.Nil(t, b)
		}})
	}
	rows = append(rows, row{"C-READ-2/stream-same-sentinels", func(t *testing.T, s *suite) {
		sb := readSandbox(t, s)
		for _, c := range readFaults {
			rc, _, err := sb.ReadFileStream(ctx(t), c.path, 1<<20)
			require.ErrorIs(t, err, c.want, "ReadFileStream(%q)", c.path)
			require.Nil(t, rc)
		}
	}})
	return rows
}

// readSandbox provisions a sandbox holding readFixtures.
func readSandbox(t *testing.T, s *suite) ports.Sandbox {
	t.Helper()
	sb := s.fresh(t)
	sh(t, sb, readFixtures)
	return sb
}

// makeRandomFile fills p with size random bytes inside the sandbox and
// returns their SHA-256 (hex), computed there.
func makeRandomFile(t *testing.T, sb ports.Sandbox, p string, size int) string {
	t.Helper()
	out := sh(t, sb, fmt.Sprintf("head -c %d /dev/urandom > %s && sha256sum < %s", size, q(p), q(p)))
	sum, _, _ := strings.Cut(out, " ")
	require.Len(t, sum, 64, "sha256sum output %q", out)
	return sum
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
