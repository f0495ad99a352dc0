package executor

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/ports"
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
		{ID: domain.MustParseSessionID("ses_c"), Recorded: true, LastActive: now.Add(-2 * time.Minute)},
		{ID: domain.MustParseSessionID("ses_a"), FirstSeen: now.Add(-time.Hour)},
		{ID: domain.MustParseSessionID("ses_b"), Recorded: true, LastActive: now},
		{ID: domain.MustParseSessionID("ses_d"), FirstSeen: now},
	}, now)
	require.Equal(t, []Reap{{ID: domain.MustParseSessionID("ses_a"), Reason: ReasonOrphan}, {ID: domain.MustParseSessionID("ses_c"), Reason: ReasonIdle}}, got)
	require.Empty(t, p.Plan(nil, now))
}

func TestReapWithoutCheckpoint(t *testing.T) {
	t.Parallel()
	for err, want := range map[error]bool{
		fmt.Errorf("store: %w", ports.ErrCheckpointTooLarge): true,
		fmt.Errorf("export: %w", sandbox.ErrFileNotExist):    true,
		fmt.Errorf("export: %w", sandbox.ErrNotFound):        true,
		errors.New("no space left on device"):                false,
		context.DeadlineExceeded:                             false,
	} {
		require.Equal(t, want, ReapWithoutCheckpoint(err), "%v", err)
	}
}

func TestExpiredCheckpoints(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	cs := []ports.StoredCheckpoint{
		{ID: domain.MustParseSessionID("ses_c"), Stored: now.Add(-8 * 24 * time.Hour)},
		{ID: domain.MustParseSessionID("ses_a"), Stored: now.Add(-7 * 24 * time.Hour)},
		{ID: domain.MustParseSessionID("ses_b"), Stored: now.Add(-7*24*time.Hour + time.Second)},
		{ID: domain.MustParseSessionID("ses_d"), Stored: now.Add(time.Hour)},
	}
	p := ReapPolicy{CheckpointRetention: 7 * 24 * time.Hour}
	require.Equal(t, []domain.ID{domain.MustParseSessionID("ses_a"), domain.MustParseSessionID("ses_c")}, p.ExpiredCheckpoints(cs, now),
		"exactly the retention expires; younger and future-dated ones are kept")
	require.Empty(t, ReapPolicy{}.ExpiredCheckpoints(cs, now), "no retention keeps every checkpoint")
}
