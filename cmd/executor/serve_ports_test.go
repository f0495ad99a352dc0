package main

import (
	"io"
	"log/slog"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAgentKeyLastsAndIsItsOwn: the agent key derives from the secret key
// (so a restarted executor has the same one), is not the secret key, and
// is nil without a key to derive from.
func TestAgentKeyLastsAndIsItsOwn(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := testConfig(t, nil)
	first := agentKey(cfg, log)()
	require.Len(t, first, 32)
	secret, err := os.ReadFile(cfg.KeyFile)
	require.NoError(t, err)
	require.NotContains(t, string(secret), string(first))
	require.Equal(t, first, agentKey(cfg, log)(), "the same key after a restart")

	other := testConfig(t, nil)
	require.NotEqual(t, first, agentKey(other, log)(), "another executor's secret, another agent key")

	notDir := t.TempDir() + "/file"
	require.NoError(t, os.WriteFile(notDir, nil, 0o600))
	broken := testConfig(t, map[string]string{"SANDGATE_SECRET_KEY_FILE": notDir + "/key"})
	require.Nil(t, agentKey(broken, log)())
}
