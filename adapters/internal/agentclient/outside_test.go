package agentclient

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestOutsideBackstop: the probe reads the script's exit code (0 alive,
// 1 empty, else a failure) and the kill runs the kill script for the pid.
func TestOutsideBackstop(t *testing.T) {
	for code, want := range map[int]bool{0: true, 1: false} {
		alive, err := GroupAliveVia(func(context.Context, []string) (int, error) { return code, nil })(t.Context(), 42)
		require.NoError(t, err)
		require.Equal(t, want, alive)
	}
	_, err := GroupAliveVia(func(context.Context, []string) (int, error) { return 2, nil })(t.Context(), 42)
	require.Error(t, err)

	ran := make(chan []string, 1)
	KillGroupVia(func(_ context.Context, argv []string) (int, error) { ran <- argv; return 0, nil })(t.Context(), 42)
	select {
	case argv := <-ran:
		require.Equal(t, "42", argv[len(argv)-1])
	case <-time.After(5 * time.Second):
		t.Fatal("the kill never ran")
	}
}
