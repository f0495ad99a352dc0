//go:build integration

package e2e_test

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/adapters/checkpoint"
	"github.com/sandgate/sandgate/adapters/docker"
	"github.com/sandgate/sandgate/adapters/docker/dockertest"
	"github.com/sandgate/sandgate/adapters/sessionstore"
	"github.com/sandgate/sandgate/app/executor"
	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/core/session"
	"github.com/sandgate/sandgate/ports"
)

const reaperImage = "debian:bookworm"

// reaperWorld is a service on the real engine (ungated sessions: the reaper
// is what is under test) with a SQLite store, a checkpoint directory and a
// running reaper: idle TTL 2 s, orphan grace 1 s, a round every 500 ms.
type reaperWorld struct {
	svc      *executor.Service
	provider *docker.Provider
	store    *sessionstore.Store
	cp       *checkpoint.Dir
	dbPath   string
	mu       sync.Mutex
	reaps    []executor.ReapResult
}

func newReaperWorld(t *testing.T) *reaperWorld {
	t.Helper()
	w := newServiceWorld(t)
	r := executor.NewReaper(w.svc, executor.ReapPolicy{IdleTTL: 2 * time.Second, OrphanGrace: time.Second}, 500*time.Millisecond)
	r.Start()
	t.Cleanup(func() { require.NoError(t, r.Stop(context.Background())) })
	return w
}

// newServiceWorld is a reaperWorld whose reaper does not run.
func newServiceWorld(t *testing.T) *reaperWorld {
	t.Helper()
	cli := dockertest.Client(t)
	dockertest.RequireImage(t, cli, reaperImage)
	dir := t.TempDir()
	store, err := sessionstore.OpenSQLite(context.Background(), filepath.Join(dir, "store.db"), bytes.Repeat([]byte{9}, session.KeyLen))
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	cp, err := checkpoint.New(filepath.Join(dir, "checkpoints"), 64<<20)
	require.NoError(t, err)
	w := &reaperWorld{store: store, cp: cp}
	log := slog.New(slog.NewTextHandler(testLog{t}, nil))
	w.provider = docker.New(cli, docker.Options{Labels: dockertest.Labels(t, cli), Tokens: store, Logger: log})
	w.svc = executor.New(w.provider, store, session.Defaults{Image: reaperImage}, executor.WithCheckpoints(cp),
		executor.WithLogger(log), executor.WithReapObserver(func(r executor.ReapResult) {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.reaps = append(w.reaps, r)
		}))
	w.dbPath = filepath.Join(dir, "store.db")
	return w
}

// owned reports whether the endpoint still lists sid.
func (w *reaperWorld) owned(t *testing.T, sid domain.ID) bool {
	ids, err := w.provider.Owned(context.Background())
	require.NoError(t, err)
	return slices.Contains(ids, sid)
}

func (w *reaperWorld) reapOf(sid domain.ID) (executor.ReapResult, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range w.reaps {
		if r.ID == sid {
			return r, true
		}
	}
	return executor.ReapResult{}, false
}

func (w *reaperWorld) sh(t *testing.T, sid domain.ID, cmd string) string {
	t.Helper()
	res, err := w.svc.Exec(ctxFor(t), sid, sandbox.ExecRequest{Command: cmd, Timeout: time.Minute})
	require.NoError(t, err)
	require.Zero(t, res.ExitCode, "%s: %s", cmd, res.Stderr)
	return res.Stdout
}

// TestReaperCheckpointRestoreAndLongExec: an idle session is checkpointed
// and reaped, and the next provision finds its files (bytes, modes, empty
// directories, links) back; meanwhile an exec longer than the TTL keeps its
// own session alive to the end.
func TestReaperCheckpointRestoreAndLongExec(t *testing.T) {
	w := newReaperWorld(t)
	ctx := ctxFor(t)
	idle, busy := domain.NewID("ses"), domain.NewID("ses")
	// The files are written at once: the TTL is 2 s.
	_, err := w.svc.Provision(ctx, idle, session.Request{})
	require.NoError(t, err)
	w.sh(t, idle, `printf alpha > a.txt && mkdir -p sub empty && printf '#!/bin/sh\necho ran\n' > sub/run.sh &&
		chmod 0755 sub/run.sh && chmod 0700 empty && ln -s a.txt link`)
	_, err = w.svc.Provision(ctx, busy, session.Request{})
	require.NoError(t, err)

	// The long exec runs while the idle session is reaped.
	start := time.Now()
	out := w.sh(t, busy, "sleep 5 && echo done")
	require.Equal(t, "done\n", out)
	require.GreaterOrEqual(t, time.Since(start), 5*time.Second)
	_, reaped := w.reapOf(busy)
	require.False(t, reaped, "a session was reaped in the middle of an exec")

	require.Eventually(t, func() bool { return !w.owned(t, idle) }, 30*time.Second, 200*time.Millisecond,
		"the idle session is reaped")
	res, ok := w.reapOf(idle)
	require.True(t, ok)
	require.Equal(t, executor.ReasonIdle, res.Reason)
	require.Equal(t, executor.OutcomeCheckpointed, res.Outcome, "%v", res.Err)
	_, _, err = w.cp.Get(ctx, idle)
	require.NoError(t, err, "the checkpoint is stored")

	_, err = w.svc.Provision(ctx, idle, session.Request{})
	require.NoError(t, err)
	got := w.sh(t, idle, `cat a.txt; echo; stat -c '%a %n' sub/run.sh empty; readlink link; ./sub/run.sh`)
	require.Equal(t, "alpha\n755 sub/run.sh\n700 empty\na.txt\nran\n", got)
	_, _, err = w.cp.Get(ctx, idle)
	require.ErrorIs(t, err, ports.ErrCheckpointNotFound, "a restored checkpoint is deleted")
	require.NoError(t, w.svc.Delete(ctx, idle, false))
}

// TestReaperOrphan: labelled assets with no session record are reaped
// after the grace, without a checkpoint.
func TestReaperOrphan(t *testing.T) {
	w := newReaperWorld(t)
	ctx := ctxFor(t)
	orphan := domain.NewID("ses")
	_, err := w.provider.Provision(ctx, sandbox.Spec{SessionID: orphan, Image: reaperImage})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return !w.owned(t, orphan) }, 30*time.Second, 200*time.Millisecond,
		"the orphan is reaped")
	res, ok := w.reapOf(orphan)
	require.True(t, ok)
	require.Equal(t, executor.ReasonOrphan, res.Reason)
	require.Equal(t, executor.OutcomeReapedWithoutCheckpoint, res.Outcome)
	_, _, err = w.cp.Get(ctx, orphan)
	require.ErrorIs(t, err, ports.ErrCheckpointNotFound)
}

// testLog sends log lines to the test's log.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}
