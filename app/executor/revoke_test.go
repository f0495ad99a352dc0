package executor

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/gatewire"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/ports"
)

// counted rewires e as cmd/executor wires the executor — the Service and
// the provider's gate tokens on one store — with that store counting the
// revokes, and returns it.
func counted(e *env, opts ...Option) *countingStore {
	cs := &countingStore{SessionStore: e.store}
	e.prov.Tokens = cs
	e.svc = New(e.prov, cs, defaults, opts...)
	return cs
}

// countedReapEnv is newReapEnv rewired by counted.
func countedReapEnv(t *testing.T) (*reapEnv, *countingStore) {
	t.Helper()
	r := newReapEnv(t, 1<<20)
	cs := counted(r.env, WithCheckpoints(r.cp), withClock(r.clock.Now))
	r.reaper = NewReaper(r.svc, policy, time.Hour)
	return r, cs
}

// TestOneRevokePerReap: revoke-before-reap has one owner, Provider.Reap
// (whose fake revokes through its tokens as the real providers do), so
// every way a session is reaped revokes its gate token exactly once — not
// once by the Service and again by the provider — and the token no longer
// authenticates once the reap is done.
func TestOneRevokePerReap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// live persists a gate token for sid, as a provider's gated create does.
	live := func(t *testing.T, e *env, sid domain.ID) string {
		t.Helper()
		token := e.store.Generate()
		require.NoError(t, e.store.Persist(ctx, sid, token))
		return token
	}
	dead := func(t *testing.T, e *env, token string) {
		t.Helper()
		_, err := e.store.Authenticate(ctx, token)
		require.ErrorIs(t, err, gatewire.ErrUnauthorized, "the token outlived the reap")
	}

	t.Run("delete", func(t *testing.T) {
		t.Parallel()
		e, sid := provisioned(t, gatedRequest())
		cs := counted(e)
		token := live(t, e, sid)
		require.NoError(t, e.svc.Delete(ctx, sid, false))
		require.Equal(t, []domain.ID{sid}, e.prov.Reaped())
		require.Equal(t, 1, cs.revoked(sid), "revokes per DELETE")
		dead(t, e, token)
	})
	t.Run("delete-with-checkpoint", func(t *testing.T) {
		t.Parallel()
		r, cs := countedReapEnv(t)
		sid := r.provision(t, map[string]string{"/workspace/a": "alpha"})
		token := live(t, r.env, sid)
		require.NoError(t, r.svc.Delete(ctx, sid, true))
		require.Equal(t, []domain.ID{sid}, r.prov.Reaped())
		require.Equal(t, 1, cs.revoked(sid), "revokes per DELETE ?checkpoint=true")
		dead(t, r.env, token)
	})
	t.Run("idle", func(t *testing.T) {
		t.Parallel()
		r, cs := countedReapEnv(t)
		sid := r.provision(t, map[string]string{"/workspace/a": "alpha"})
		token := live(t, r.env, sid)
		r.clock.advance(time.Hour)
		got := r.reaper.Round(ctx)
		require.Len(t, got, 1)
		require.Equal(t, ReasonIdle, got[0].Reason)
		require.Equal(t, OutcomeCheckpointed, got[0].Outcome)
		require.Equal(t, 1, cs.revoked(sid), "revokes per idle reap")
		dead(t, r.env, token)
	})
	t.Run("orphan", func(t *testing.T) {
		t.Parallel()
		r, cs := countedReapEnv(t)
		orphan := domain.NewID("ses")
		_, err := r.prov.Provision(ctx, sandbox.Spec{SessionID: orphan}) // assets, no record
		require.NoError(t, err)
		token := live(t, r.env, orphan)
		require.Empty(t, r.reaper.Round(ctx))
		r.clock.advance(policy.OrphanGrace)
		got := r.reaper.Round(ctx)
		require.Len(t, got, 1)
		require.Equal(t, OutcomeReapedWithoutCheckpoint, got[0].Outcome)
		require.Equal(t, 1, cs.revoked(orphan), "revokes per orphan reap")
		dead(t, r.env, token)
	})
}

// countingStore is a store that counts the revokes of each session, so a
// test can hand it to both the Service and the provider's tokens and count
// every revoke, whoever makes it.
type countingStore struct {
	ports.SessionStore
	mu      sync.Mutex
	revokes map[domain.ID]int
}

func (c *countingStore) Revoke(ctx context.Context, sid domain.ID) error {
	c.mu.Lock()
	if c.revokes == nil {
		c.revokes = map[domain.ID]int{}
	}
	c.revokes[sid]++
	c.mu.Unlock()
	return c.SessionStore.Revoke(ctx, sid)
}

// revoked returns how many times sid's token was revoked.
func (c *countingStore) revoked(sid domain.ID) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.revokes[sid]
}
