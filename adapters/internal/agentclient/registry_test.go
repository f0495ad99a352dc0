package agentclient

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/agentwire"
)

// TestLaunch: with a key, the agent starts as a relay and its first line
// is the sandbox's token; without one, it serves alone and hears nothing
// first.
func TestLaunch(t *testing.T) {
	key := func() []byte { return []byte("k") }
	argv, hello := Launch(key, "c0ffee")
	require.Equal(t, agentwire.RelayArgv(), argv)
	require.Equal(t, agentwire.Token([]byte("k"), "c0ffee")+"\n", hello)
	for _, none := range []func() []byte{nil, func() []byte { return nil }} {
		argv, hello = Launch(none, "c0ffee")
		require.Equal(t, agentwire.Argv(), argv)
		require.Empty(t, hello)
	}
}
