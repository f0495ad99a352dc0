package main

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/gatewire"
)

var (
	testToken = gatewire.NewToken()
	testSID   = domain.NewID("ses")
)

// testSecretValue must never appear in a log.
const testSecretValue = "s3cr3t-value-never-logged"

var errInjected = errors.New("injected failure")

// getenv reads a test environment.
func getenv(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// testLogger logs JSON at debug level into a file, and returns a function
// that reads what was logged so far; at the test's end the log must hold
// neither the secret nor the token. A file, not a buffer: the gate logs
// from its own goroutines while the test reads.
func testLogger(t *testing.T) (*slog.Logger, func() string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "gate.log")
	f, err := os.Create(path)
	require.NoError(t, err)
	logs := func() string {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		return string(b)
	}
	t.Cleanup(func() {
		require.NotContains(t, logs(), testSecretValue)
		require.NotContains(t, logs(), testToken)
		require.NoError(t, f.Close())
	})
	return slog.New(slog.NewJSONHandler(f, &slog.HandlerOptions{Level: slog.LevelDebug})), logs
}
