package cli

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMCPUsageErrors(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	for name, c := range map[string]struct {
		args []string
		want string
	}{
		"http without token": {[]string{"mcp", "--http", "127.0.0.1:0"}, "--http needs $SANDGATE_MCP_TOKEN"},
		"secret on stdin":    {[]string{"mcp", "--credential", "id=a,name=A,secret-stdin,hosts=h"}, "not stdin"},
		"zero output":        {[]string{"mcp", "--max-output", "0"}, "must be positive"},
		"positional":         {[]string{"mcp", "extra"}, "got 1"},
	} {
		r := h.run(c.args...)
		require.Equal(t, ExitUsage, r.code, name)
		require.Contains(t, r.stderr, c.want, name)
	}
}

// Over stdio the server answers a client's initialize on stdout and ends
// when stdin does (the e2e test drives whole sessions).
func TestMCPStdio(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}
`)
	r := h.run("mcp")
	require.Equal(t, ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, `"serverInfo":{"name":"sandgate"`)
	require.Contains(t, r.stdout, "create_sandbox", "the instructions name the first tool")
}
