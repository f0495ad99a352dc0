package versioncmd

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRun(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args   []string
		code   int
		stdout string
	}{
		{[]string{"version"}, 0, "gate v1.2.3\n"},
		{[]string{"-version"}, 0, "gate v1.2.3\n"},
		{[]string{"--version"}, 0, "gate v1.2.3\n"},
		{nil, ExitUsage, ""},
		{[]string{"serve"}, ExitUsage, ""},
		{[]string{"version", "extra"}, ExitUsage, ""},
		{[]string{"-h"}, ExitUsage, ""},
		{[]string{"VERSION"}, ExitUsage, ""},
	} {
		var stdout, stderr bytes.Buffer
		code := Run("gate", "v1.2.3", "gate will be the egress gate.", tc.args, &stdout, &stderr)
		require.Equal(t, tc.code, code, "exit code for %q", tc.args)
		require.Equal(t, tc.stdout, stdout.String(), "stdout for %q", tc.args)
		if code == ExitUsage {
			require.Equal(t, "usage: gate version\n\ngate will be the egress gate.\n", stderr.String(), "usage for %q", tc.args)
		} else {
			require.Empty(t, stderr.String())
		}
	}
}

type brokenWriter struct{}

func (brokenWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

func TestRunWriteFailure(t *testing.T) {
	t.Parallel()
	require.Equal(t, ExitFailure, Run("gate", "v1", "about", []string{"version"}, brokenWriter{}, brokenWriter{}))
	require.Equal(t, ExitUsage, Run("gate", "v1", "about", []string{"bogus"}, brokenWriter{}, brokenWriter{}))
}
