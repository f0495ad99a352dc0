package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/ports/portfake"
)

// TestServeReaperCountsReaps runs the graph with an orphan on the fake
// endpoint, no grace and a fast interval: the reaper started by OnStart
// reaps it, and /metrics counts the reap by reason and outcome.
func TestServeReaperCountsReaps(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t, map[string]string{"SANDGATE_ORPHAN_GRACE": "0s", "SANDGATE_REAP_INTERVAL": "20ms"})
	p := portfake.NewProvider()
	p.Stop(domain.MustParseSessionID("ses_orphan")) // labelled assets that no record names
	base, app, logs := started(t, cfg, p)
	want := `sandgate_reaps_total{otel_scope_name="github.com/sandgate/sandgate/app",otel_scope_schema_url="",otel_scope_version="",outcome="reaped_without_checkpoint",reason="orphan"}`
	require.Eventually(t, func() bool {
		_, body := get(t, base+"/metrics", "")
		return strings.Contains(body, want)
	}, 10*time.Second, 20*time.Millisecond, "the orphan's reap is counted")
	require.DirExists(t, cfg.CheckpointDir, "OnStart prepared the checkpoint store")
	app.RequireStop()
	require.Contains(t, logs.String(), `"session":"ses_orphan"`)
}
