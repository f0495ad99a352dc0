//go:build integration

package e2e_test

import (
	"bufio"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/core/session"
	"github.com/sandgate/sandgate/internal/pgtest"
)

// TestTwoExecutorsReap: two executors on one PostgreSQL and one daemon, both
// reaping. A session kept busy through executor b is never reaped by a
// (activity is shared through the database); an idle one is reaped exactly
// once between them. The TTL outlasts the activity write debounce (5 s) plus
// a reap interval, as a deployment's must.
func TestTwoExecutorsReap(t *testing.T) {
	dbURL := pgtest.Database(t)
	w := newWorld(t)
	settings := map[string]string{"SANDGATE_DATABASE_URL": dbURL, "SANDGATE_IDLE_TTL": "12s",
		"SANDGATE_REAP_INTERVAL": "2s"}
	pa, pb := w.start(t, "a", settings), w.start(t, "b", settings)
	a, b := pa.client(t), pb.client(t)
	ctx := ctxMinutes(t, 3)

	busy, idle := domain.NewID("ses"), domain.NewID("ses")
	info, err := a.Provision(ctx, busy, session.Request{})
	require.NoError(t, err)
	_, err = a.Provision(ctx, idle, session.Request{})
	require.NoError(t, err)

	deadline := time.Now().Add(40 * time.Second)
	for time.Now().Before(deadline) && len(w.containersOf(t, idle)) > 0 {
		_, err := b.Exec(ctx, busy, sandbox.ExecRequest{Command: "true", Timeout: time.Minute})
		require.NoError(t, err, "the busy session stays available")
		time.Sleep(time.Second)
	}
	require.Empty(t, w.containersOf(t, idle), "the idle session is reaped within the TTL and a few rounds")
	_, err = a.Get(ctx, idle)
	require.ErrorIs(t, err, sandbox.ErrNotFound)
	got, err := a.Get(ctx, busy)
	require.NoError(t, err, "a did not reap the session b kept busy")
	require.Equal(t, info.SandboxID, got.SandboxID)
	require.Equal(t, 1, reapsOf(t, pa)+reapsOf(t, pb), "exactly one executor reaped the idle session")
}

// reapsOf sums sandgate_reaps_total on an executor's /metrics.
func reapsOf(t *testing.T, p *proc) int {
	t.Helper()
	resp, err := http.Get(p.url + "/metrics")
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	n := 0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "sandgate_reaps_total{") {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		require.NoError(t, err, line)
		n += int(v)
	}
	require.NoError(t, sc.Err())
	return n
}
