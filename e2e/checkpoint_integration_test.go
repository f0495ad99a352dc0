//go:build integration

package e2e_test

import (
	"archive/tar"
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/docker/docker/api/types/container"
	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/adapters/docker"
	"github.com/sandgate/sandgate/adapters/docker/dockertest"
	"github.com/sandgate/sandgate/adapters/httpapi"
	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/core/session"
	"github.com/sandgate/sandgate/internal/storetest"
	"github.com/sandgate/sandgate/ports"
)

// checkpointWorld is a serviceWorld behind the HTTP API, with its client.
type checkpointWorld struct {
	*reaperWorld
	c *httpapi.Client
}

func newCheckpointWorld(t *testing.T) *checkpointWorld {
	t.Helper()
	w := newServiceWorld(t)
	srv := httptest.NewServer(httpapi.NewAPIHandler(w.svc, httpapi.APIOptions{Token: apiToken}))
	t.Cleanup(srv.Close)
	c, err := httpapi.NewClient(srv.URL, apiToken, nil)
	require.NoError(t, err)
	return &checkpointWorld{reaperWorld: w, c: c}
}

// create provisions sid through the API and runs cmd in it.
func (w *checkpointWorld) create(t *testing.T, sid domain.ID, cmd string) {
	t.Helper()
	_, err := w.c.Provision(ctxFor(t), sid, session.Request{})
	require.NoError(t, err)
	w.run(t, sid, cmd)
}

func (w *checkpointWorld) run(t *testing.T, sid domain.ID, cmd string) string {
	t.Helper()
	res, err := w.c.Exec(ctxFor(t), sid, sandbox.ExecRequest{Command: cmd})
	require.NoError(t, err)
	require.Zero(t, res.ExitCode, "%s: %s", cmd, res.Stderr)
	return res.Stdout
}

// stop stops the session's sandbox container, as `docker stop` would.
func (w *checkpointWorld) stop(t *testing.T, sid domain.ID) {
	t.Helper()
	zero := 0
	cli := dockertest.Client(t)
	require.NoError(t, cli.ContainerStop(ctxFor(t), docker.ContainerName(sid.String()), container.StopOptions{Timeout: &zero}))
	_, err := w.provider.Attach(ctxFor(t), sid)
	require.ErrorIs(t, err, sandbox.ErrNotFound, "stopped")
	require.True(t, w.owned(t, sid), "but still there")
}

func (w *checkpointWorld) putCheckpoint(t *testing.T, sid domain.ID, data []byte) {
	t.Helper()
	_, err := w.cp.Put(ctxFor(t), sid, bytes.NewReader(data))
	require.NoError(t, err)
}

func (w *checkpointWorld) hasCheckpoint(t *testing.T, sid domain.ID) bool {
	t.Helper()
	rc, _, err := w.cp.Get(ctxFor(t), sid)
	if err == nil {
		require.NoError(t, rc.Close())
		return true
	}
	require.ErrorIs(t, err, ports.ErrCheckpointNotFound)
	return false
}

// workspaceTar is a checkpoint of a workdir holding one file f.
func workspaceTar(t *testing.T, content string) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	require.NoError(t, tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: "workspace/", Mode: 0o755}))
	require.NoError(t, tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "workspace/f", Mode: 0o644, Size: int64(len(content))}))
	_, err := tw.Write([]byte(content))
	require.NoError(t, err)
	require.NoError(t, tw.Close())
	return buf.Bytes()
}

// TestDeleteDeletesCheckpoint: DELETE ?checkpoint=true keeps the workspace,
// a plain DELETE then deletes it, and the next PUT of the id starts empty.
func TestDeleteDeletesCheckpoint(t *testing.T) {
	w := newCheckpointWorld(t)
	ctx := ctxFor(t)
	sid := domain.NewID("ses")
	w.create(t, sid, "printf deleted > f")
	require.NoError(t, w.c.Delete(ctx, sid, true))
	require.True(t, w.hasCheckpoint(t, sid))
	require.NoError(t, w.c.Delete(ctx, sid, false))
	require.False(t, w.hasCheckpoint(t, sid), "a plain DELETE deletes the checkpoint")
	w.create(t, sid, "true")
	require.Equal(t, "absent\n", w.run(t, sid, "test -e f && echo present || echo absent"),
		"the deleted workspace is not restored")

	// Asked to keep it, a DELETE keeps the checkpoint the reaper (here: a
	// first DELETE) already took of a session with no sandbox.
	w.run(t, sid, "printf kept > f")
	require.NoError(t, w.c.Delete(ctx, sid, true))
	require.NoError(t, w.c.Delete(ctx, sid, true), "no sandbox: the stored checkpoint is what is kept")
	require.True(t, w.hasCheckpoint(t, sid))
	w.create(t, sid, "true")
	require.Equal(t, "kept", w.run(t, sid, "cat f"))
	require.NoError(t, w.c.Delete(ctx, sid, false))
}

// TestRestoreKeepsNewerData: a stopped sandbox's files are newer than an
// older checkpoint: the PUT restarts the sandbox with its files and drops
// the stale checkpoint. An unreadable checkpoint beside a stopped sandbox
// never costs the sandbox (the only copy of the data); without a sandbox
// it fails the PUT with 409 before anything is created, and is kept.
func TestRestoreKeepsNewerData(t *testing.T) {
	w := newCheckpointWorld(t)
	ctx := ctxFor(t)

	newer := domain.NewID("ses")
	w.create(t, newer, "printf newer > f")
	w.putCheckpoint(t, newer, workspaceTar(t, "older"))
	w.stop(t, newer)
	_, err := w.c.Provision(ctx, newer, session.Request{})
	require.NoError(t, err)
	require.Equal(t, "newer", w.run(t, newer, "cat f"), "the stopped sandbox's files win")
	require.False(t, w.hasCheckpoint(t, newer), "the stale checkpoint is deleted")

	only := domain.NewID("ses")
	w.create(t, only, "printf only-copy > f")
	w.putCheckpoint(t, only, []byte("not a tar at all"))
	w.stop(t, only)
	_, err = w.c.Provision(ctx, only, session.Request{})
	require.NoError(t, err)
	require.Equal(t, "only-copy", w.run(t, only, "cat f"), "the container holding the data is kept")

	bad := domain.NewID("ses")
	w.putCheckpoint(t, bad, workspaceTar(t, "truncated")[:700])
	_, err = w.c.Provision(ctx, bad, session.Request{})
	var apiErr *httpapi.APIError
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusConflict, apiErr.Status)
	require.Equal(t, httpapi.CodeCheckpointUnreadable, apiErr.Code)
	require.Contains(t, apiErr.Message, "kept")
	require.False(t, w.owned(t, bad), "nothing was created")
	require.True(t, w.hasCheckpoint(t, bad))
	require.NoError(t, w.c.Delete(ctx, bad, false), "DELETE discards it")
	require.False(t, w.hasCheckpoint(t, bad))

	for _, sid := range []domain.ID{newer, only} {
		require.NoError(t, w.c.Delete(ctx, sid, false))
	}
}

// TestDeleteOnReadOnlyStore: with a store that refuses writes, DELETE fails
// with the sandbox and its record as they were; once the store writes
// again, DELETE removes both.
func TestDeleteOnReadOnlyStore(t *testing.T) {
	w := newCheckpointWorld(t)
	ctx := ctxFor(t)
	sid := domain.NewID("ses")
	w.create(t, sid, "printf kept > f")
	restore := storetest.ReadOnly(t, w.dbPath)

	err := w.c.Delete(ctx, sid, false)
	var apiErr *httpapi.APIError
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusInternalServerError, apiErr.Status)
	require.True(t, w.owned(t, sid), "the sandbox is kept")
	require.Equal(t, "kept", w.run(t, sid, "cat f"))
	_, err = w.store.GetSession(ctx, sid)
	require.NoError(t, err, "with its record")

	restore()
	require.NoError(t, w.c.Delete(ctx, sid, false))
	require.False(t, w.owned(t, sid))
	_, err = w.c.Get(ctx, sid)
	require.ErrorIs(t, err, sandbox.ErrNotFound)
	require.NotContains(t, err.Error(), "internal")
}
