package executor

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/core/session"
	"github.com/sandgate/sandgate/ports"
)

// tarOf returns a checkpoint holding files (relative to the workdir).
func tarOf(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	require.NoError(t, tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: "workspace/", Mode: 0o755}))
	for name, data := range files {
		require.NoError(t, tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "workspace/" + name, Mode: 0o644, Size: int64(len(data))}))
		_, err := tw.Write([]byte(data))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	return buf.Bytes()
}

func (r *reapEnv) putCheckpoint(t *testing.T, sid domain.ID, data []byte) {
	t.Helper()
	_, err := r.cp.Put(context.Background(), sid, bytes.NewReader(data))
	require.NoError(t, err)
}

func (r *reapEnv) checkpointKept(t *testing.T, sid domain.ID) bool {
	t.Helper()
	rc, _, err := r.cp.Get(context.Background(), sid)
	if errors.Is(err, ports.ErrCheckpointNotFound) {
		return false
	}
	require.NoError(t, err)
	require.NoError(t, rc.Close())
	return true
}

// TestPlainDeleteDeletesTheCheckpoint: a DELETE without ?checkpoint=true
// deletes the session's checkpoint, so the next PUT of the id starts empty;
// with it, the workspace is kept, also when the reaper already took it.
func TestPlainDeleteDeletesTheCheckpoint(t *testing.T) {
	t.Parallel()
	r := newReapEnv(t, 1<<20)
	ctx := context.Background()
	sid := r.provision(t, map[string]string{"/workspace/a": "alpha"})
	r.clock.advance(time.Hour)
	require.Equal(t, []string{sid.String() + " idle checkpointed"}, outcomes(r.reaper.Round(ctx)))

	require.NoError(t, r.svc.Delete(ctx, sid, true), "the reaper's checkpoint is the workspace to keep")
	require.True(t, r.checkpointKept(t, sid))
	require.NoError(t, r.svc.Delete(ctx, sid, false))
	require.False(t, r.checkpointKept(t, sid), "a plain delete deletes the checkpoint")
	_, err := r.svc.Provision(ctx, sid, session.Request{})
	require.NoError(t, err)
	require.Empty(t, r.prov.Box(sid).Files(), "the deleted workspace is not restored")

	require.NoError(t, r.svc.Delete(ctx, sid, false))
	require.ErrorIs(t, r.svc.Delete(ctx, sid, true), sandbox.ErrNotFound, "no sandbox and no checkpoint: nothing to keep")
}

// TestCheckpointRetention: the reaper deletes checkpoints older than the
// retention and keeps younger ones; zero keeps them all.
func TestCheckpointRetention(t *testing.T) {
	t.Parallel()
	r := newReapEnv(t, 1<<20)
	ctx := context.Background()
	r.clock.now = time.Now()
	old, young := domain.NewID("ses"), domain.NewID("ses")
	r.putCheckpoint(t, old, tarOf(t, nil))
	r.putCheckpoint(t, young, tarOf(t, nil))
	list, err := r.cp.List(ctx)
	require.NoError(t, err)
	require.Len(t, list, 2)
	eightDays := time.Now().Add(-8 * 24 * time.Hour)
	require.NoError(t, os.Chtimes(filepath.Join(r.cpDir, old.String()+".tar"), eightDays, eightDays))

	r.reaper.Round(ctx)
	require.True(t, r.checkpointKept(t, old), "no retention configured: kept")

	r.reaper = NewReaper(r.svc, ReapPolicy{IdleTTL: time.Hour, CheckpointRetention: 7 * 24 * time.Hour}, time.Hour)
	r.reaper.Round(ctx)
	require.False(t, r.checkpointKept(t, old), "older than the retention")
	require.True(t, r.checkpointKept(t, young))
}

// TestRestoreNeverOverAStoppedSandbox: a stopped sandbox holds newer files
// than an older checkpoint; the PUT adopts it and the checkpoint is not
// restored over it (it is stale, and deleted).
func TestRestoreNeverOverAStoppedSandbox(t *testing.T) {
	t.Parallel()
	r := newReapEnv(t, 1<<20)
	ctx := context.Background()
	sid := r.provision(t, map[string]string{"/workspace/f": "newer"})
	r.putCheckpoint(t, sid, tarOf(t, map[string]string{"f": "older"}))
	r.prov.Stop(sid) // docker stop: the files are kept

	_, err := r.svc.Provision(ctx, sid, session.Request{})
	require.NoError(t, err)
	require.Equal(t, "newer", string(r.prov.Box(sid).File("/workspace/f")))
	require.False(t, r.checkpointKept(t, sid), "the stale checkpoint is deleted once the sandbox is adopted")
}

// TestUnreadableCheckpointDestroysNothing: a checkpoint that cannot be read
// fails the PUT before anything is created or removed, and is kept; beside
// an existing (stopped) sandbox it is never even read, and the sandbox
// holding the only copy of the data survives.
func TestUnreadableCheckpointDestroysNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	valid := tarOf(t, map[string]string{"f": "data"})
	for name, data := range map[string][]byte{
		"garbage":   []byte("this is not a tar"),
		"truncated": valid[:700],
		"empty":     nil,
		"escaping":  tarMember(t, "../../etc/passwd"),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := newReapEnv(t, 1<<20)
			sid := domain.NewID("ses")
			r.putCheckpoint(t, sid, data)
			_, err := r.svc.Provision(ctx, sid, session.Request{})
			require.ErrorIs(t, err, ports.ErrBadCheckpoint)
			require.ErrorContains(t, err, "kept")
			require.Empty(t, r.prov.Specs(), "nothing was created")
			require.True(t, r.checkpointKept(t, sid))
			_, err = r.store.GetSession(ctx, sid)
			require.ErrorIs(t, err, session.ErrNotFound, "no record was written")
		})
	}
	t.Run("beside a stopped sandbox", func(t *testing.T) {
		t.Parallel()
		r := newReapEnv(t, 1<<20)
		sid := r.provision(t, map[string]string{"/workspace/only": "copy"})
		r.putCheckpoint(t, sid, []byte("this is not a tar"))
		r.prov.Stop(sid) // docker stop: the files are kept
		_, err := r.svc.Provision(ctx, sid, session.Request{})
		require.NoError(t, err)
		require.Empty(t, r.prov.Reaped(), "the sandbox holding the data is not removed")
		require.Equal(t, "copy", string(r.prov.Box(sid).File("/workspace/only")))
	})
}

func tarMember(t *testing.T, name string) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	require.NoError(t, tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644}))
	require.NoError(t, tw.Close())
	return buf.Bytes()
}

// failingStore fails the writes that remove or revoke while fail is set,
// like a store gone read-only.
type failingStore struct {
	ports.SessionStore
	fail atomic.Bool
}

var errReadOnly = errors.New("attempt to write a readonly database")

func (f *failingStore) DeleteSession(ctx context.Context, sid domain.ID) error {
	if f.fail.Load() {
		return errReadOnly
	}
	return f.SessionStore.DeleteSession(ctx, sid)
}

// TestStoreFailureKeepsSandboxAndRecordTogether: a record that cannot be
// removed fails the delete (and the reap) with the sandbox kept; once the
// store writes again, the retry removes both.
func TestStoreFailureKeepsSandboxAndRecordTogether(t *testing.T) {
	t.Parallel()
	r := newReapEnv(t, 1<<20)
	ctx := context.Background()
	fs := &failingStore{SessionStore: r.store}
	r.svc = New(r.prov, fs, defaults, WithCheckpoints(r.cp), withClock(r.clock.Now))
	r.reaper = NewReaper(r.svc, policy, time.Hour)
	sid := r.provision(t, map[string]string{"/workspace/a": "alpha"})
	idle := r.provision(t, nil)
	fs.fail.Store(true)

	require.ErrorIs(t, r.svc.Delete(ctx, sid, false), errReadOnly)
	require.Empty(t, r.prov.Reaped(), "the sandbox is kept with its record")
	_, err := r.svc.Get(ctx, sid)
	require.NoError(t, err)

	r.clock.advance(time.Hour)
	got := r.reaper.Round(ctx)
	require.Len(t, got, 2)
	for _, res := range got {
		require.Equal(t, OutcomeFailed, res.Outcome)
		require.ErrorIs(t, res.Err, errReadOnly)
	}
	require.Empty(t, r.prov.Reaped(), "the reaper keeps them too")

	fs.fail.Store(false)
	require.NoError(t, r.svc.Delete(ctx, sid, false))
	require.Len(t, r.reaper.Round(ctx), 1)
	require.ElementsMatch(t, []domain.ID{sid, idle}, r.prov.Reaped())
}
