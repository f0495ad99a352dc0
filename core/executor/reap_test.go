package executor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
)

func TestReapDecide(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	p := ReapPolicy{IdleTTL: time.Minute, OrphanGrace: 30 * time.Second}
	for _, tc := range []struct {
		name   string
		p      ReapPolicy
		c      ReapCandidate
		reason ReapReason
		reap   bool
	}{
		{"active", p, ReapCandidate{Recorded: true, LastActive: ago(59 * time.Second), FirstSeen: ago(time.Hour)}, ReasonIdle, false},
		{"idle exactly ttl", p, ReapCandidate{Recorded: true, LastActive: ago(time.Minute)}, ReasonIdle, true},
		{"idle", p, ReapCandidate{Recorded: true, LastActive: ago(time.Hour)}, ReasonIdle, true},
		{"idle but in flight", p, ReapCandidate{Recorded: true, LastActive: ago(time.Hour), InFlight: 1}, "", false},
		{"unknown activity counts from first sight", p, ReapCandidate{Recorded: true, FirstSeen: ago(30 * time.Second)}, ReasonIdle, false},
		{"unknown activity, seen long ago", p, ReapCandidate{Recorded: true, FirstSeen: ago(2 * time.Minute)}, ReasonIdle, true},
		{"no ttl keeps idle sessions", ReapPolicy{OrphanGrace: time.Second}, ReapCandidate{Recorded: true, LastActive: ago(time.Hour)}, "", false},
		{"orphan within grace", p, ReapCandidate{FirstSeen: ago(29 * time.Second)}, ReasonOrphan, false},
		{"orphan past grace", p, ReapCandidate{FirstSeen: ago(30 * time.Second)}, ReasonOrphan, true},
		{"orphan in flight", p, ReapCandidate{FirstSeen: ago(time.Hour), InFlight: 2}, "", false},
		{"orphan without ttl", ReapPolicy{}, ReapCandidate{FirstSeen: now}, ReasonOrphan, true},
	} {
		reason, reap := tc.p.Decide(tc.c, now)
		require.Equal(t, tc.reap, reap, tc.name)
		require.Equal(t, tc.reason, reason, tc.name)
	}
}

func TestReapPlan(t *testing.T) {
	t.Parallel()
	now := time.Now()
	p := ReapPolicy{IdleTTL: time.Minute, OrphanGrace: time.Minute}
	got := p.Plan([]ReapCandidate{
		{ID: "ses_c", Recorded: true, LastActive: now.Add(-2 * time.Minute)},
		{ID: "ses_a", FirstSeen: now.Add(-time.Hour)},
		{ID: "ses_b", Recorded: true, LastActive: now},
		{ID: "ses_d", FirstSeen: now},
	}, now)
	require.Equal(t, []Reap{{ID: "ses_a", Reason: ReasonOrphan}, {ID: "ses_c", Reason: ReasonIdle}}, got)
	require.Empty(t, p.Plan(nil, now))
}

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
		require.ErrorIs(t, err, ErrBadCheckpoint, "%q", bad)
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

func TestReapWithoutCheckpoint(t *testing.T) {
	t.Parallel()
	for err, want := range map[error]bool{
		fmt.Errorf("store: %w", ErrCheckpointTooLarge):    true,
		fmt.Errorf("export: %w", sandbox.ErrFileNotExist): true,
		fmt.Errorf("export: %w", sandbox.ErrNotFound):     true,
		errors.New("no space left on device"):             false,
		context.DeadlineExceeded:                          false,
	} {
		require.Equal(t, want, ReapWithoutCheckpoint(err), "%v", err)
	}
}

func TestExpiredCheckpoints(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	cs := []StoredCheckpoint{
		{ID: "ses_c", Stored: now.Add(-8 * 24 * time.Hour)},
		{ID: "ses_a", Stored: now.Add(-7 * 24 * time.Hour)},
		{ID: "ses_b", Stored: now.Add(-7*24*time.Hour + time.Second)},
		{ID: "ses_d", Stored: now.Add(time.Hour)},
	}
	p := ReapPolicy{CheckpointRetention: 7 * 24 * time.Hour}
	require.Equal(t, []domain.ID{"ses_a", "ses_c"}, p.ExpiredCheckpoints(cs, now),
		"exactly the retention expires; younger and future-dated ones are kept")
	require.Empty(t, ReapPolicy{}.ExpiredCheckpoints(cs, now), "no retention keeps every checkpoint")
}
