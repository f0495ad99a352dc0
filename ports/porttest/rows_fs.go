package porttest

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/ports"
)

// fsFixtures makes every kind of path stat, list, remove and mkdir meet,
// under /workspace/f, with a known modification time on "file".
var fsFixtures = `set -e
mkdir -p /workspace/f/dir/sub /workspace/f/empty
printf 'hello' > /workspace/f/file
chmod 4751 /workspace/f/file
touch -d @1700000000 /workspace/f/file
printf 'x' > /workspace/f/dir/sub/leaf
printf 'x' > '/workspace/f/new
line'
: > /workspace/f/-dash
mkfifo /workspace/f/fifo
ln -s file /workspace/f/link-file
ln -s dir /workspace/f/link-dir
ln -s '/no/such
thing' /workspace/f/link-dangling
`

// fsSandbox provisions a sandbox holding fsFixtures.
func fsSandbox(t *testing.T, s *suite) ports.Sandbox {
	t.Helper()
	sb := s.fresh(t)
	sh(t, sb, fsFixtures)
	return sb
}

// fsNames are fsFixtures' entries of /workspace/f, sorted byte-wise.
var fsNames = []string{"-dash", "dir", "empty", "fifo", "file", "link-dangling", "link-dir", "link-file", "new\nline"}

// fsRows: Stat, List, Remove and Mkdir (CONTRACT §7a, C-FS-1..4).
func fsRows() []row {
	return []row{
		{"C-FS-1/stat-kinds", func(t *testing.T, s *suite) {
			sb := fsSandbox(t, s)
			fi, err := sb.Stat(ctx(t), "/workspace/f/file")
			require.NoError(t, err)
			require.Equal(t, sandbox.FileInfo{Name: "/workspace/f/file", Type: sandbox.TypeFile, Size: 5, Mode: 0o4751,
				ModTime: time.Unix(1700000000, 0).UTC()}, fi)
			for p, want := range map[string]sandbox.FileType{
				"/": sandbox.TypeDir, "/workspace/f/dir": sandbox.TypeDir, "/workspace/f/fifo": sandbox.TypeOther,
				"/dev/null": sandbox.TypeOther, "/workspace/f/link-dir": sandbox.TypeSymlink,
				"/workspace/f/new\nline": sandbox.TypeFile,
			} {
				fi, err := sb.Stat(ctx(t), p)
				require.NoError(t, err, p)
				require.Equal(t, want, fi.Type, p)
				require.Equal(t, p, fi.Name)
			}
			fi, err = sb.Stat(ctx(t), "/workspace/f/link-dangling")
			require.NoError(t, err)
			require.Equal(t, sandbox.TypeSymlink, fi.Type, "never followed")
			require.Equal(t, "/no/such\nthing", fi.LinkTarget)
			fi, err = sb.Stat(ctx(t), "/workspace/f/dir")
			require.NoError(t, err)
			require.Equal(t, uint32(0o755), fi.Mode)
			require.WithinDuration(t, time.Now(), fi.ModTime, 10*time.Minute)
		}},
		{"C-FS-1/stat-faults", func(t *testing.T, s *suite) {
			sb := fsSandbox(t, s)
			for p, want := range map[string]error{
				"/workspace/f/missing": sandbox.ErrFileNotExist, "/workspace/f/missing/x": sandbox.ErrFileNotExist,
				"/workspace/f/file/x": sandbox.ErrNotDirectory, "/workspace/f/file/x/y": sandbox.ErrNotDirectory,
			} {
				_, err := sb.Stat(ctx(t), p)
				require.ErrorIs(t, err, want, p)
			}
			for _, p := range []string{"", "rel", "/a/../b", "/a/"} {
				_, err := sb.Stat(ctx(t), p)
				require.Error(t, err, "%q is refused", p)
			}
		}},
		{"C-FS-1/stat-unsearchable-not-readable", func(t *testing.T, s *suite) {
			sb := s.nonRoot(t)
			_, err := sb.Stat(ctx(t), "/root/.bashrc") // /root is 0700 root's
			require.ErrorIs(t, err, sandbox.ErrNotReadable)
		}},
		{"C-FS-2/list-sorted-lstat", func(t *testing.T, s *suite) {
			sb := fsSandbox(t, s)
			infos, err := sb.List(ctx(t), "/workspace/f")
			require.NoError(t, err)
			byName := map[string]sandbox.FileInfo{}
			var names []string
			for _, fi := range infos {
				names = append(names, fi.Name)
				byName[fi.Name] = fi
			}
			require.Equal(t, fsNames, names, "sorted by name, names verbatim")
			require.Equal(t, sandbox.FileInfo{Name: "file", Type: sandbox.TypeFile, Size: 5, Mode: 0o4751,
				ModTime: time.Unix(1700000000, 0).UTC()}, byName["file"])
			require.Equal(t, sandbox.TypeSymlink, byName["link-dir"].Type, "entries are lstat'ed")
			require.Equal(t, "dir", byName["link-dir"].LinkTarget)
			require.Equal(t, "/no/such\nthing", byName["link-dangling"].LinkTarget)
			require.Equal(t, sandbox.TypeOther, byName["fifo"].Type)
			require.Equal(t, sandbox.TypeDir, byName["dir"].Type)

			infos, err = sb.List(ctx(t), "/workspace/f/link-dir")
			require.NoError(t, err)
			require.Len(t, infos, 1, "a symlink to a directory lists the directory")
			require.Equal(t, "sub", infos[0].Name)
			infos, err = sb.List(ctx(t), "/workspace/f/empty")
			require.NoError(t, err)
			require.NotNil(t, infos)
			require.Empty(t, infos)
			infos, err = sb.List(ctx(t), "/")
			require.NoError(t, err)
			require.NotEmpty(t, infos)
		}},
		{"C-FS-2/list-faults", func(t *testing.T, s *suite) {
			sb := fsSandbox(t, s)
			for p, want := range map[string]error{
				"/workspace/f/file": sandbox.ErrNotDirectory, "/workspace/f/fifo": sandbox.ErrNotDirectory,
				"/workspace/f/link-file": sandbox.ErrNotDirectory, "/workspace/f/missing": sandbox.ErrFileNotExist,
				"/workspace/f/link-dangling": sandbox.ErrFileNotExist, "/workspace/f/file/x": sandbox.ErrNotDirectory,
			} {
				infos, err := sb.List(ctx(t), p)
				require.ErrorIs(t, err, want, p)
				require.Nil(t, infos)
			}
			nr := s.nonRoot(t)
			_, err := nr.List(ctx(t), "/root")
			require.ErrorIs(t, err, sandbox.ErrNotReadable)
		}},
		{"C-FS-2/list-bounded", func(t *testing.T, s *suite) {
			sb := s.fresh(t)
			sh(t, sb, fmt.Sprintf("mkdir /workspace/many && cd /workspace/many && seq -f 'f%%06g' %d | xargs touch",
				sandbox.MaxListEntries+1))
			infos, err := sb.List(ctx(t), "/workspace/many")
			require.ErrorIs(t, err, sandbox.ErrTooManyEntries, "refused, never answered in part")
			require.ErrorIs(t, err, sandbox.ErrFileTooLarge)
			require.Nil(t, infos)
			sh(t, sb, "rm /workspace/many/f000001")
			infos, err = sb.List(ctx(t), "/workspace/many")
			require.NoError(t, err, "exactly the bound is listed")
			require.Len(t, infos, sandbox.MaxListEntries)
			require.Equal(t, "f000002", infos[0].Name)
		}},
		{"C-FS-3/remove-kinds", func(t *testing.T, s *suite) {
			sb := fsSandbox(t, s)
			for _, p := range []string{"/workspace/f/-dash", "/workspace/f/new\nline", "/workspace/f/fifo",
				"/workspace/f/link-dir", "/workspace/f/link-file", "/workspace/f/link-dangling", "/workspace/f/empty"} {
				require.NoError(t, sb.Remove(ctx(t), p, false), p)
				require.False(t, exists(t, sb, p), p)
			}
			require.Equal(t, "hello", string(readBack(t, sb, "/workspace/f/file")), "a symlink's pointee is untouched")
			require.True(t, exists(t, sb, "/workspace/f/dir/sub/leaf"), "so is a linked directory")
		}},
		{"C-FS-3/remove-tree-needs-recursive", func(t *testing.T, s *suite) {
			sb := fsSandbox(t, s)
			err := sb.Remove(ctx(t), "/workspace/f/dir", false)
			require.ErrorIs(t, err, sandbox.ErrIsDirectory)
			require.True(t, exists(t, sb, "/workspace/f/dir/sub/leaf"), "left whole")
			require.NoError(t, sb.Remove(ctx(t), "/workspace/f/dir", true))
			require.False(t, exists(t, sb, "/workspace/f/dir"))
			require.NoError(t, sb.Remove(ctx(t), "/workspace/f/file", true), "recursive removes a file too")
		}},
		{"C-FS-3/remove-faults", func(t *testing.T, s *suite) {
			sb := fsSandbox(t, s)
			for p, want := range map[string]error{
				"/workspace/f/missing": sandbox.ErrFileNotExist, "/workspace/f/file/x": sandbox.ErrNotDirectory,
				"/etc/hosts": sandbox.ErrNotReplaceable, // a mount point on both backends
			} {
				require.ErrorIs(t, sb.Remove(ctx(t), p, true), want, p)
			}
			for _, p := range []string{"/", "", "rel", "/workspace/f/../f"} {
				err := sb.Remove(ctx(t), p, true)
				require.Error(t, err, "%q is refused", p)
				require.NotErrorIs(t, err, sandbox.ErrFileNotExist)
			}
			require.True(t, exists(t, sb, "/workspace/f/file"), "nothing was removed")
			require.True(t, exists(t, sb, "/etc/hosts"))
		}},
		{"C-FS-3/remove-not-writable", func(t *testing.T, s *suite) {
			sb := s.nonRoot(t)
			requireNotWritable(t, sb.Remove(ctx(t), "/etc/passwd", false), "Permission denied")
			require.True(t, exists(t, sb, "/etc/passwd"))
		}},
		{"C-FS-4/mkdir-0755-and-parents", func(t *testing.T, s *suite) {
			sb := fsSandbox(t, s)
			require.NoError(t, sb.Mkdir(ctx(t), "/workspace/f/new", false))
			require.Equal(t, "755", statMode(t, sb, "/workspace/f/new"))
			err := sb.Mkdir(ctx(t), "/workspace/f/a/b/c", false)
			require.ErrorIs(t, err, sandbox.ErrFileNotExist, "a missing parent without parents")
			require.False(t, exists(t, sb, "/workspace/f/a"))
			require.NoError(t, sb.Mkdir(ctx(t), "/workspace/f/a/b/c", true))
			for _, p := range []string{"/workspace/f/a", "/workspace/f/a/b", "/workspace/f/a/b/c"} {
				require.Equal(t, "755", statMode(t, sb, p), p)
			}
			fi, err := sb.Stat(ctx(t), "/workspace/f/a/b/c")
			require.NoError(t, err)
			require.Equal(t, sandbox.TypeDir, fi.Type)
		}},
		{"C-FS-4/mkdir-existing", func(t *testing.T, s *suite) {
			sb := fsSandbox(t, s)
			require.ErrorIs(t, sb.Mkdir(ctx(t), "/workspace/f/dir", false), sandbox.ErrIsDirectory)
			require.NoError(t, sb.Mkdir(ctx(t), "/workspace/f/dir", true), "like mkdir -p")
			require.NoError(t, sb.Mkdir(ctx(t), "/workspace/f/link-dir", true), "a symlink to a directory is one")
			require.NoError(t, sb.Mkdir(ctx(t), "/", true))
			require.True(t, exists(t, sb, "/workspace/f/dir/sub/leaf"), "untouched")
		}},
		{"C-FS-4/mkdir-blocked", func(t *testing.T, s *suite) {
			sb := fsSandbox(t, s)
			for _, p := range []string{"/workspace/f/file", "/workspace/f/file/x", "/workspace/f/file/x/y",
				"/workspace/f/link-dangling", "/workspace/f/fifo"} {
				require.ErrorIs(t, sb.Mkdir(ctx(t), p, true), sandbox.ErrNotDirectory, p)
			}
			require.Equal(t, "hello", string(readBack(t, sb, "/workspace/f/file")), "the blocker is unchanged")
		}},
		{"C-FS-4/mkdir-not-writable", func(t *testing.T, s *suite) {
			sb := s.nonRoot(t)
			requireNotWritable(t, sb.Mkdir(ctx(t), "/usr/sandgate-x/y", true), "Permission denied")
			requireNotWritable(t, sb.Mkdir(ctx(t), "/usr/sandgate-x", false), "Permission denied")
		}},
	}
}
