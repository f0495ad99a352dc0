//go:build integration

package e2e_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/core/session"
	"github.com/sandgate/sandgate/internal/testworld"
)

// TestAPIBytesPreserved (issue 11 item 6): output that is not UTF-8 comes
// back byte for byte through the real sandbox, handler and client; a command
// whose JSON carries a raw 0xff is refused, and runs nothing.
func TestAPIBytesPreserved(t *testing.T) {
	env := testworld.New(t)
	srvURL, c := api(t, env)
	ctx := ctxFor(t)
	sid := domain.NewID("ses")
	_, err := c.Provision(ctx, sid, session.Request{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Delete(ctx, sid, false) })

	res, err := c.Exec(ctx, sid, sandbox.ExecRequest{Command: `printf 'a\377\376b\0c'; printf '\303' >&2`})
	require.NoError(t, err)
	require.Equal(t, "a\xff\xfeb\x00c", res.Stdout)
	require.Equal(t, "\xc3", res.Stderr)

	body := "{\"command\":\"touch /tmp/ran\xff\"}"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srvURL+"/v1/sessions/"+sid.String()+"/exec", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+apiToken)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	res, err = c.Exec(ctx, sid, sandbox.ExecRequest{Command: "ls /tmp"})
	require.NoError(t, err)
	require.NotContains(t, res.Stdout, "ran", "the refused command ran nothing")
}
