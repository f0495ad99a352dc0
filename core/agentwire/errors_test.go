package agentwire

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/sandbox"
)

func TestCodeRoundTrip(t *testing.T) {
	t.Parallel()
	for _, s := range sentinels {
		wrapped := fmt.Errorf("/x: %w", s.err)
		require.Equal(t, s.code, CodeOf(wrapped))
		require.ErrorIs(t, Error{Code: s.code, Path: "/x"}.Err(), s.err)
		require.ErrorIs(t, Error{Code: s.code}.Err(), s.err)
	}
	require.Equal(t, CodeInternal, CodeOf(errors.New("boom")))
}

func TestErrCarriesPathAndReason(t *testing.T) {
	t.Parallel()
	err := Error{Code: CodeNotWritable, Path: "/etc/x", Reason: "Read-only file system"}.Err()
	var nw *sandbox.PathNotWritableError
	require.ErrorAs(t, err, &nw)
	require.Equal(t, "/etc/x", nw.Path)
	require.Equal(t, "Read-only file system", nw.Reason)
	require.Equal(t, CodeNotWritable, CodeOf(err))

	err = Error{Code: CodeNotReadable, Path: "/secret", Reason: "Permission denied"}.Err()
	require.ErrorIs(t, err, sandbox.ErrNotReadable)
	require.ErrorContains(t, err, "Permission denied")
	require.ErrorContains(t, err, "/secret")

	err = Error{Code: CodeIsDirectory, Path: "/workspace/d"}.Err()
	require.ErrorContains(t, err, "/workspace/d")
}

func TestUnknownCode(t *testing.T) {
	t.Parallel()
	for _, code := range []string{CodeInvalid, CodeInternal, "novel"} {
		err := Error{Code: code, Message: "why"}.Err()
		require.ErrorContains(t, err, code)
		require.ErrorContains(t, err, "why")
		require.Equal(t, CodeInternal, CodeOf(err))
	}
}

func TestArgv(t *testing.T) {
	t.Parallel()
	require.Equal(t, []string{"/.sandgate/agent/sandgate-agent", "serve"}, Argv())
}

func TestRelayArgvAndToken(t *testing.T) {
	t.Parallel()
	require.Equal(t, []string{"/.sandgate/agent/sandgate-agent", "relay"}, RelayArgv())
	a := Token([]byte("key"), "sandbox-1")
	require.Len(t, a, MaxTokenLine-1)
	require.Equal(t, a, Token([]byte("key"), "sandbox-1"), "derived, so a restarted executor finds the same")
	require.NotEqual(t, a, Token([]byte("key"), "sandbox-2"))
	require.NotEqual(t, a, Token([]byte("other"), "sandbox-1"))
}
