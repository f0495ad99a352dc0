package agentwire

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/sandbox"
)

// TestErrorRoundTrip: every sentinel survives the wire, so a provider over
// the agent answers exactly what the fallback path answers.
func TestErrorRoundTrip(t *testing.T) {
	for _, s := range sentinels {
		t.Run(s.code, func(t *testing.T) {
			wrapped := fmt.Errorf("/w/x: %w", s.err)
			code := CodeOf(wrapped)
			require.Equal(t, s.code, code)
			back := Error{Code: code, Message: wrapped.Error(), Path: "/w/x"}.Err()
			require.ErrorIs(t, back, s.err)
			require.Contains(t, back.Error(), "/w/x")
		})
	}
}

func TestNotWritableKeepsReason(t *testing.T) {
	err := &sandbox.PathNotWritableError{Path: "/ro/f", Reason: "Read-only file system"}
	require.Equal(t, CodeNotWritable, CodeOf(err))
	back := Error{Code: CodeNotWritable, Path: "/ro/f", Reason: "Read-only file system"}.Err()
	var pe *sandbox.PathNotWritableError
	require.ErrorAs(t, back, &pe)
	require.Equal(t, *err, *pe)
}

func TestUnknownCodeIsInternal(t *testing.T) {
	require.Equal(t, CodeInternal, CodeOf(errors.New("boom")))
	err := Error{Code: "no_such_code", Message: "m"}.Err()
	for _, s := range sentinels {
		require.NotErrorIs(t, err, s.err)
	}
	require.EqualError(t, err, "agent: no_such_code: m")
	require.Equal(t, "/.sandgate/agent/sandgate-agent", Argv()[0])
}
