package executor

import (
	"io/fs"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/ports"
)

func TestReroot(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ workdir, name, want string }{
		{"/workspace", "workspace/", "/workspace"},
		{"/workspace", "workspace", "/workspace"},
		{"/workspace", "workspace/a/b.txt", "/workspace/a/b.txt"},
		{"/srv/app", "workspace/a/", "/srv/app/a"},
		{"/workspace", "./workspace/x", "/workspace/x"},
	} {
		got, err := Reroot(tc.workdir, tc.name)
		require.NoError(t, err, tc.name)
		require.Equal(t, tc.want, got, tc.name)
	}
	for _, bad := range []string{"", "/etc/passwd", "..", "../x", "workspace/../../etc", "workspace/a\x00", ".", "./"} {
		_, err := Reroot("/workspace", bad)
		require.ErrorIs(t, err, ports.ErrBadCheckpoint, "%q", bad)
	}
}

func TestRestoreScripts(t *testing.T) {
	t.Parallel()
	got := RestoreScripts([]RestoreEntry{
		{Kind: RestoreDir, Path: "/w", Mode: 0o755},
		{Kind: RestoreDir, Path: "/w/locked", Mode: 0o500},
		{Kind: RestoreDir, Path: "/w/locked/in", Mode: 0o700},
		{Kind: RestoreFile, Path: "/w/run.sh", Mode: 0o755},
		{Kind: RestoreFile, Path: "/w/plain", Mode: 0o644},
		{Kind: RestoreSymlink, Path: "/w/it's", Target: "run.sh"},
		{Kind: RestoreDir, Path: "/w/empty", Mode: fs.ModeDir | 0o755},
	})
	require.Equal(t, []string{strings.Join([]string{
		"set -e",
		"mkdir -p -- '/w'",
		"mkdir -p -- '/w/locked'",
		"mkdir -p -- '/w/locked/in'",
		"mkdir -p -- '/w/empty'",
		`ln -sfn -- 'run.sh' '/w/it'\''s'`,
		"chmod 0755 -- '/w/run.sh'",
		"chmod 0700 -- '/w/locked/in'",
		"chmod 0500 -- '/w/locked'",
	}, "\n")}, got)
	require.Empty(t, RestoreScripts([]RestoreEntry{{Kind: RestoreFile, Path: "/w/a", Mode: 0o644}}))

	many := make([]RestoreEntry, 5000)
	for i := range many {
		many[i] = RestoreEntry{Kind: RestoreDir, Path: "/w/" + strings.Repeat("d", 40) + string(rune('a'+i%26)), Mode: 0o755}
	}
	scripts := RestoreScripts(many)
	require.Greater(t, len(scripts), 1)
	lines := 0
	for _, s := range scripts {
		require.LessOrEqual(t, len(s), sandbox.MaxCommandBytes)
		require.True(t, strings.HasPrefix(s, "set -e\n"))
		lines += strings.Count(s, "\n")
	}
	require.Equal(t, len(many), lines)
}
