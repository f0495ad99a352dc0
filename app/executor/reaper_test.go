package executor

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/adapters/checkpoint"
	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/core/session"
	"github.com/sandgate/sandgate/ports"
	"github.com/sandgate/sandgate/ports/portfake"
)

// clock is a settable time source.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// reapEnv is an env with a checkpoint store, a clock, a reaper (TTL 1m,
// grace 30s) and the reaps observed.
type reapEnv struct {
	*env
	cp     *checkpoint.Dir
	cpDir  string
	clock  *clock
	reaper *Reaper
	mu     sync.Mutex
	seen   []ReapResult
}

var policy = ReapPolicy{IdleTTL: time.Minute, OrphanGrace: 30 * time.Second}

func newReapEnv(t *testing.T, maxBytes int64) *reapEnv {
	t.Helper()
	e := newEnv(t)
	dir := filepath.Join(t.TempDir(), "cp")
	cp, err := checkpoint.New(dir, maxBytes)
	require.NoError(t, err)
	r := &reapEnv{env: e, cp: cp, cpDir: dir, clock: &clock{now: time.UnixMilli(1_800_000_000_000)}}
	e.svc = New(e.prov, e.store, defaults, WithCheckpoints(cp), withClock(r.clock.Now),
		WithReapObserver(func(res ReapResult) { r.mu.Lock(); r.seen = append(r.seen, res); r.mu.Unlock() }))
	r.reaper = NewReaper(e.svc, policy, time.Hour)
	return r
}

func (r *reapEnv) provision(t *testing.T, files map[string]string) domain.ID {
	t.Helper()
	sid := domain.NewID("ses")
	_, err := r.svc.Provision(context.Background(), sid, session.Request{})
	require.NoError(t, err)
	for p, data := range files {
		require.NoError(t, r.svc.WriteFile(context.Background(), sid, p, bytes.NewReader([]byte(data)), int64(len(data))))
	}
	return sid
}

func (r *reapEnv) observed() []ReapResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]ReapResult(nil), r.seen...)
}

func outcomes(rs []ReapResult) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.ID.String()+" "+string(r.Reason)+" "+string(r.Outcome))
	}
	return out
}

func TestReaperIdleCheckpointAndRestore(t *testing.T) {
	t.Parallel()
	r := newReapEnv(t, 1<<20)
	ctx := context.Background()
	sid := r.provision(t, map[string]string{"/workspace/a.txt": "alpha", "/workspace/d/run.sh": "#!/bin/sh"})
	busy := r.provision(t, nil)

	r.clock.advance(59 * time.Second)
	_, err := r.svc.Exec(ctx, busy, sandbox.ExecRequest{Command: "true"})
	require.NoError(t, err)
	require.Empty(t, r.reaper.Round(ctx), "nothing is idle for a minute yet")
	r.clock.advance(time.Second)
	got := r.reaper.Round(ctx)
	require.Equal(t, []string{sid.String() + " idle checkpointed"}, outcomes(got))
	require.Equal(t, outcomes(got), outcomes(r.observed()), "the observer sees every reap")
	require.Positive(t, got[0].Size)
	require.Equal(t, []domain.ID{sid}, r.prov.Reaped())
	_, err = r.store.GetSession(ctx, sid)
	require.ErrorIs(t, err, session.ErrNotFound, "an idle reap removes the record")
	_, err = r.svc.Exec(ctx, sid, sandbox.ExecRequest{Command: "true"})
	require.ErrorIs(t, err, sandbox.ErrNotFound, "the cached handle is dropped")

	_, err = r.svc.Provision(ctx, sid, session.Request{})
	require.NoError(t, err)
	box := r.prov.Box(sid)
	require.Equal(t, "alpha", string(box.File("/workspace/a.txt")))
	require.Equal(t, "#!/bin/sh", string(box.File("/workspace/d/run.sh")))
	last := box.Execs()[len(box.Execs())-1].Command
	require.Contains(t, last, "mkdir -p -- '/workspace'")
	require.Contains(t, last, "chmod 0755 -- '/workspace/d/run.sh'")
	_, _, err = r.cp.Get(ctx, sid)
	require.ErrorIs(t, err, ports.ErrCheckpointNotFound, "a restored checkpoint is deleted")
}

func TestReaperKeepsSessionsInFlight(t *testing.T) {
	t.Parallel()
	r := newReapEnv(t, 1<<20)
	ctx := context.Background()
	sid := r.provision(t, map[string]string{"/workspace/f": "data"})
	rc, _, err := r.svc.ReadFile(ctx, sid, "/workspace/f", 100)
	require.NoError(t, err)
	r.clock.advance(time.Hour)
	require.Empty(t, r.reaper.Round(ctx), "a transfer in flight keeps its session")
	stored, err := r.store.GetSession(ctx, sid)
	require.NoError(t, err)
	require.Equal(t, r.clock.Now().UnixMilli(), stored.LastActive.UnixMilli(), "the heartbeat writes an in-flight session's activity")

	require.NoError(t, rc.Close())
	require.NoError(t, rc.Close(), "a second close ends nothing twice")
	r.clock.advance(59 * time.Second)
	require.Empty(t, r.reaper.Round(ctx), "the end of the transfer was activity")
	_, err = r.svc.Get(ctx, sid)
	require.NoError(t, err)
	r.clock.advance(59 * time.Second)
	require.Empty(t, r.reaper.Round(ctx), "a get is activity too")
	r.clock.advance(time.Second)
	require.Len(t, r.reaper.Round(ctx), 1)
	require.Nil(t, r.svc.handles.get(sid))
	_, err = r.svc.Get(ctx, sid)
	require.ErrorIs(t, err, sandbox.ErrNotFound)
}

func TestReaperOrphans(t *testing.T) {
	t.Parallel()
	r := newReapEnv(t, 1<<20)
	ctx := context.Background()
	orphan := domain.NewID("ses")
	_, err := r.prov.Provision(ctx, sandbox.Spec{SessionID: orphan}) // assets, no record
	require.NoError(t, err)
	recorded := r.provision(t, nil)

	require.Empty(t, r.reaper.Round(ctx), "an orphan first seen now is in its grace")
	r.clock.advance(29 * time.Second)
	require.Empty(t, r.reaper.Round(ctx))
	r.clock.advance(time.Second)
	got := r.reaper.Round(ctx)
	require.Equal(t, []string{orphan.String() + " orphan reaped_without_checkpoint"}, outcomes(got))
	require.ErrorContains(t, got[0].Err, "no session record")
	_, _, err = r.cp.Get(ctx, orphan)
	require.ErrorIs(t, err, ports.ErrCheckpointNotFound)
	_, err = r.store.GetSession(ctx, recorded)
	require.NoError(t, err, "a recorded session is never an orphan")
}

// TestReaperRechecksUnderTheLock holds the session's lock while a round
// plans to reap it, uses the session meanwhile, and checks that the reap,
// re-checked under the lock, does not happen.
func TestReaperRechecksUnderTheLock(t *testing.T) {
	t.Parallel()
	r := newReapEnv(t, 1<<20)
	ctx := context.Background()
	sid := r.provision(t, nil)
	r.clock.advance(2 * time.Minute)

	unlock, err := r.svc.locks.lock(ctx, r.svc.store, sid)
	require.NoError(t, err)
	done := make(chan []ReapResult)
	go func() { done <- r.reaper.Round(ctx) }()
	require.Eventually(t, func() bool { return r.svc.locks.local.Refs(sid) == 2 }, 5*time.Second, time.Millisecond,
		"the round must wait for the session's lock")
	_, err = r.svc.Exec(ctx, sid, sandbox.ExecRequest{Command: "true"})
	require.NoError(t, err)
	unlock()
	require.Empty(t, <-done, "activity after the listing must cancel the reap")
	require.Empty(t, r.prov.Reaped())
}

func TestReapCheckpointTooLarge(t *testing.T) {
	t.Parallel()
	r := newReapEnv(t, 1024)
	ctx := context.Background()
	sid := r.provision(t, map[string]string{"/workspace/big": string(bytes.Repeat([]byte("x"), 4096))})
	_, err := r.cp.Put(ctx, sid, bytes.NewReader([]byte("an older checkpoint")))
	require.NoError(t, err)

	// An explicit delete keeps the session when it cannot keep the workdir.
	err = r.svc.Delete(ctx, sid, true)
	require.ErrorIs(t, err, ports.ErrCheckpointTooLarge)
	require.Empty(t, r.prov.Reaped())
	_, err = r.svc.Exec(ctx, sid, sandbox.ExecRequest{Command: "true"})
	require.NoError(t, err, "a failed explicit delete leaves the session usable")

	// The reaper reaps anyway, and drops the older checkpoint.
	r.clock.advance(time.Hour)
	got := r.reaper.Round(ctx)
	require.Equal(t, []string{sid.String() + " idle reaped_without_checkpoint"}, outcomes(got))
	require.ErrorIs(t, got[0].Err, ports.ErrCheckpointTooLarge)
	_, _, err = r.cp.Get(ctx, sid)
	require.ErrorIs(t, err, ports.ErrCheckpointNotFound, "a stale checkpoint must not be restored later")
	require.Equal(t, []string{
		sid.String() + " explicit failed", sid.String() + " idle reaped_without_checkpoint",
	}, outcomes(r.observed()))
}

// TestReapKeepsSandboxOnTransientCheckpointFailure: an export that fails for
// a reason that may pass keeps the sandbox and the older checkpoint; the
// next round checkpoints and reaps.
func TestReapKeepsSandboxOnTransientCheckpointFailure(t *testing.T) {
	t.Parallel()
	r := newReapEnv(t, 1<<20)
	ctx := context.Background()
	sid := r.provision(t, map[string]string{"/workspace/k": "kept"})
	_, err := r.cp.Put(ctx, sid, bytes.NewReader([]byte("an older checkpoint")))
	require.NoError(t, err)
	transient := errors.New("engine did not answer")
	r.prov.Fail(portfake.OpExport, transient)

	r.clock.advance(time.Hour)
	got := r.reaper.Round(ctx)
	require.Equal(t, []string{sid.String() + " idle failed"}, outcomes(got))
	require.ErrorIs(t, got[0].Err, transient)
	require.Empty(t, r.prov.Reaped(), "the sandbox is kept")
	_, _, err = r.cp.Get(ctx, sid)
	require.NoError(t, err, "the older checkpoint is kept")

	r.prov.Fail(portfake.OpExport, nil)
	got = r.reaper.Round(ctx)
	require.Equal(t, []string{sid.String() + " idle checkpointed"}, outcomes(got))
	rc, _, err := r.cp.Get(ctx, sid)
	require.NoError(t, err)
	require.Equal(t, []string{"workspace/", "workspace/k"}, tarNames(t, rc))
	require.NoError(t, rc.Close())
}

func TestDeleteWithCheckpoint(t *testing.T) {
	t.Parallel()
	r := newReapEnv(t, 1<<20)
	ctx := context.Background()
	sid := r.provision(t, map[string]string{"/workspace/k": "kept"})
	require.NoError(t, r.svc.Delete(ctx, sid, true))
	require.Equal(t, []string{sid.String() + " explicit checkpointed"}, outcomes(r.observed()))
	rc, _, err := r.cp.Get(ctx, sid)
	require.NoError(t, err)
	require.Equal(t, []string{"workspace/", "workspace/k"}, tarNames(t, rc))
	require.NoError(t, rc.Close())
	_, err = r.store.GetSession(ctx, sid)
	require.ErrorIs(t, err, session.ErrNotFound)

	// A checkpoint of a session that runs again is stale: not restored.
	_, err = r.prov.Provision(ctx, sandbox.Spec{SessionID: sid})
	require.NoError(t, err)
	_, err = r.svc.Provision(ctx, sid, session.Request{})
	require.NoError(t, err)
	require.Empty(t, r.prov.Box(sid).Files())
	_, _, err = r.cp.Get(ctx, sid)
	require.ErrorIs(t, err, ports.ErrCheckpointNotFound)
}

func TestCachedHandle(t *testing.T) {
	t.Parallel()
	e, sid := provisioned(t, session.Request{})
	ctx := context.Background()
	for range 3 {
		_, err := e.svc.Exec(ctx, sid, sandbox.ExecRequest{Command: "true"})
		require.NoError(t, err)
	}
	require.Zero(t, e.prov.Calls(portfake.OpAttach), "the provision's handle is reused")

	// Someone else reaps and re-provisions: the cached handle is stale.
	require.NoError(t, e.prov.Reap(ctx, sid))
	_, err := e.prov.Provision(ctx, sandbox.Spec{SessionID: sid})
	require.NoError(t, err)
	_, err = e.svc.Exec(ctx, sid, sandbox.ExecRequest{Command: "true"})
	require.NoError(t, err)
	require.NoError(t, e.svc.WriteFile(ctx, sid, "/w/x", bytes.NewReader([]byte("x")), 1))
	require.Equal(t, 1, e.prov.Calls(portfake.OpAttach), "one re-attach after the stale handle")

	// A stream write that consumed its source is not retried.
	require.NoError(t, e.prov.Reap(ctx, sid))
	_, err = e.prov.Provision(ctx, sandbox.Spec{SessionID: sid})
	require.NoError(t, err)
	err = e.svc.WriteFile(ctx, sid, "/w/y", bytes.NewReader([]byte("y")), 1)
	require.ErrorIs(t, err, sandbox.ErrNotFound, "the fake reads the source before it fails")
	_, err = e.svc.Exec(ctx, sid, sandbox.ExecRequest{Command: "true"})
	require.NoError(t, err, "the stale handle was dropped all the same")
}

func TestActivityWritesDebounced(t *testing.T) {
	t.Parallel()
	r := newReapEnv(t, 1<<20)
	ctx := context.Background()
	sid := r.provision(t, nil)
	start := r.clock.Now()
	for range 10 {
		r.clock.advance(100 * time.Millisecond)
		_, err := r.svc.Exec(ctx, sid, sandbox.ExecRequest{Command: "true"})
		require.NoError(t, err)
	}
	rec, err := r.store.GetSession(ctx, sid)
	require.NoError(t, err)
	require.Equal(t, start.UnixMilli(), rec.LastActive.UnixMilli(), "no write within the debounce")
	r.clock.advance(DefaultTouchDebounce)
	_, err = r.svc.Exec(ctx, sid, sandbox.ExecRequest{Command: "true"})
	require.NoError(t, err)
	rec, err = r.store.GetSession(ctx, sid)
	require.NoError(t, err)
	require.Equal(t, r.clock.Now().UnixMilli(), rec.LastActive.UnixMilli())
}

func TestReaperStartStop(t *testing.T) {
	t.Parallel()
	r := newReapEnv(t, 1<<20)
	r.reaper = NewReaper(r.svc, ReapPolicy{IdleTTL: time.Nanosecond}, 10*time.Millisecond)
	sid := r.provision(t, nil)
	r.clock.advance(time.Second)
	require.NoError(t, r.reaper.Stop(context.Background()), "stopping a reaper never started is fine")
	r.reaper.Start()
	require.Eventually(t, func() bool { return len(r.observed()) == 1 }, 5*time.Second, 5*time.Millisecond)
	require.NoError(t, r.reaper.Stop(context.Background()))
	require.Equal(t, []string{sid.String() + " idle checkpointed"}, outcomes(r.observed()))
}

// TestFailedRestoreKeepsCheckpoint: a restore that fails (a write error)
// fails the provision; the retried provision must restore the checkpoint,
// not take it for the stale one of a running sandbox and delete it.
func TestFailedRestoreKeepsCheckpoint(t *testing.T) {
	t.Parallel()
	r := newReapEnv(t, 1<<20)
	ctx := context.Background()
	sid := r.provision(t, map[string]string{"/workspace/k": "kept"})
	require.NoError(t, r.svc.Delete(ctx, sid, true))

	r.prov.Fail(portfake.OpWriteFiles, errors.New("write failed"))
	_, err := r.svc.Provision(ctx, sid, session.Request{})
	require.ErrorContains(t, err, "restore the checkpoint")
	_, err = r.svc.Exec(ctx, sid, sandbox.ExecRequest{Command: "true"})
	require.ErrorIs(t, err, sandbox.ErrNotFound, "the half-restored sandbox is not left running")
	_, err = r.store.GetSession(ctx, sid)
	require.ErrorIs(t, err, session.ErrNotFound, "the provision's record is undone")

	r.prov.Fail(portfake.OpWriteFiles, nil)
	_, err = r.svc.Provision(ctx, sid, session.Request{})
	require.NoError(t, err)
	require.Equal(t, "kept", string(r.prov.Box(sid).File("/workspace/k")), "the retry restores the workdir")
	_, _, err = r.cp.Get(ctx, sid)
	require.ErrorIs(t, err, ports.ErrCheckpointNotFound, "and only then deletes the checkpoint")
}

// TestProvisionIsActivityUntilItReturns: a provision slower than the idle
// TTL leaves its session active from its end, not its start.
func TestProvisionIsActivityUntilItReturns(t *testing.T) {
	t.Parallel()
	r := newReapEnv(t, 1<<20)
	ctx := context.Background()
	r.prov.Hook(portfake.OpProvision, func(context.Context, domain.ID) error {
		r.clock.advance(2 * policy.IdleTTL)
		return nil
	})
	sid := r.provision(t, nil)
	rec, err := r.store.GetSession(ctx, sid)
	require.NoError(t, err)
	require.Equal(t, r.clock.Now().UnixMilli(), rec.LastActive.UnixMilli(), "the stored activity is the provision's end")
	require.Empty(t, r.reaper.Round(ctx), "a session just provisioned was reaped")
}

// TestReaperKeepsSessionsWithRunningProcs: a session idle for the TTL whose
// sandbox runs a background proc is not reaped (and its activity is
// recorded); once the proc has ended, it is.
func TestReaperKeepsSessionsWithRunningProcs(t *testing.T) {
	t.Parallel()
	r := newReapEnv(t, 1<<20)
	ctx := context.Background()
	sid := r.provision(t, nil)
	p, err := r.svc.Procs(sid).StartProc(ctx, sandbox.ProcStart{Command: "sleep 1000"})
	require.NoError(t, err)
	r.clock.advance(2 * time.Minute)
	require.Empty(t, r.reaper.Round(ctx), "a running proc is activity")
	rec, err := r.store.GetSession(ctx, sid)
	require.NoError(t, err)
	require.True(t, rec.LastActive.Equal(r.clock.Now()), "recorded for the other executors: %v", rec.LastActive)

	require.NoError(t, r.svc.Procs(sid).SignalProc(ctx, p.ID, "KILL"))
	r.clock.advance(2 * time.Minute)
	require.Equal(t, []string{sid.String() + " idle checkpointed"}, outcomes(r.reaper.Round(ctx)))
}
