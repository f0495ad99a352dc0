package porttest

import (
	"archive/tar"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
)

// exportRows: Export (CONTRACT §4).
func exportRows() []row {
	return []row{
		{"C-EXP-1/tar-layout", func(t *testing.T, s *suite) {
			spec := s.spec(t)
			sb := s.provision(t, spec)
			bin := payload(3000, 7)
			sh(t, sb, `mkdir -p /workspace/exp/sub/deeper /workspace/exp/empty
printf 'top\n' > /workspace/exp/a.txt
ln -s a.txt /workspace/exp/link
ln -s /nowhere/at/all /workspace/exp/dangling
ln -s sub /workspace/exp/dirlink
printf 'deep' > '/workspace/exp/sub/deeper/name with space'`)
			require.NoError(t, sb.WriteFile(ctx(t), "/workspace/exp/sub/b.bin", bin))
			m := exportMembers(t, s, spec.SessionID, "/workspace/exp")
			for name := range m {
				require.True(t, name == "exp" || strings.HasPrefix(name, "exp/"), "member %q outside the top directory", name)
			}
			require.Equal(t, "top\n", m["exp/a.txt"].data)
			require.Equal(t, string(bin), m["exp/sub/b.bin"].data)
			require.Equal(t, "deep", m["exp/sub/deeper/name with space"].data)
			for name, target := range map[string]string{"exp/link": "a.txt", "exp/dangling": "/nowhere/at/all", "exp/dirlink": "sub"} {
				require.Contains(t, m, name)
				require.Equal(t, byte(tar.TypeSymlink), m[name].hdr.Typeflag, "%s must be a symlink entry", name)
				require.Equal(t, target, m[name].hdr.Linkname)
			}
			require.Contains(t, m, "exp/empty")
			require.Equal(t, byte(tar.TypeDir), m["exp/empty"].hdr.Typeflag)
		}},
		{"C-EXP-1/workdir-root", func(t *testing.T, s *suite) {
			spec := s.spec(t)
			sb := s.provision(t, spec)
			require.NoError(t, sb.WriteFile(ctx(t), "/workspace/w.txt", []byte("w")))
			m := exportMembers(t, s, spec.SessionID, "/workspace")
			require.Equal(t, "w", m["workspace/w.txt"].data)
		}},
		{"C-EXP-2/missing-root", func(t *testing.T, s *suite) {
			spec := s.spec(t)
			s.provision(t, spec)
			rc, err := s.h.Provider.Export(ctx(t), spec.SessionID, "/workspace/never-made")
			require.ErrorIs(t, err, sandbox.ErrFileNotExist)
			require.Nil(t, rc)
		}},
		{"C-EXP-2/unknown-session", func(t *testing.T, s *suite) {
			rc, err := s.h.Provider.Export(ctx(t), s.sid(t), "/workspace")
			requireNotFound(t, err, "export of a session without a sandbox")
			require.Nil(t, rc)
		}},
		{"C-EXP-2/dangling-symlink-root", func(t *testing.T, s *suite) {
			spec := s.spec(t)
			sb := s.provision(t, spec)
			sh(t, sb, "ln -s /no/such/target /workspace/dangle")
			m := exportMembers(t, s, spec.SessionID, "/workspace/dangle")
			require.Len(t, m, 1, "members %v", keys(m))
			require.Equal(t, byte(tar.TypeSymlink), m["dangle"].hdr.Typeflag)
			require.Equal(t, "/no/such/target", m["dangle"].hdr.Linkname)
		}},
	}
}

// member is one tar entry with its contents.
type member struct {
	hdr  *tar.Header
	data string
}

// exportMembers exports root and reads the whole tar, keyed by the member
// name without a trailing slash. It also proves the stream is plain tar
// (a compressed one fails the reader).
func exportMembers(t *testing.T, s *suite, id domain.ID, root string) map[string]member {
	t.Helper()
	rc, err := s.h.Provider.Export(ctx(t), id, root)
	require.NoError(t, err, "export %s", root)
	require.NotNil(t, rc)
	defer func() { require.NoError(t, rc.Close()) }()
	tr := tar.NewReader(rc)
	m := map[string]member{}
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err, "reading the export")
		b, err := io.ReadAll(tr)
		require.NoError(t, err)
		name := strings.TrimSuffix(hdr.Name, "/")
		require.NotContains(t, m, name, "duplicate member %q", name)
		m[name] = member{hdr: hdr, data: string(b)}
	}
	require.NotEmpty(t, m, "an export holds at least its root")
	return m
}

func keys(m map[string]member) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
