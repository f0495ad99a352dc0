package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/sandbox"
)

// TestExecOutputBytesSurvive: output that is not UTF-8 comes back byte for
// byte through the client, and flagged on the wire (issue 11 item 6: it
// came back with U+FFFD and no flag).
func TestExecOutputBytesSurvive(t *testing.T) {
	t.Parallel()
	e := newAPI(t, APIOptions{Token: apiToken})
	want := sandbox.ExecResult{Stdout: "a\xff\xfeb\x00c", Stderr: "é\xc3", ExitCode: 3}
	e.svc.ExecResult = want
	got, err := e.client.Exec(context.Background(), sid, sandbox.ExecRequest{Command: "x"})
	require.NoError(t, err)
	require.Equal(t, want, got)

	a := e.do(t, http.MethodPost, "/v1/sessions/ses_test/exec", strings.NewReader(`{"command":"x"}`), nil)
	require.Equal(t, http.StatusOK, a.status)
	var wire map[string]any
	require.NoError(t, json.Unmarshal(a.body, &wire))
	require.Equal(t, "a\uFFFDb\x00c", wire["stdout"], "the text form, for display")
	require.Equal(t, "Yf/+YgBj", wire["stdout_base64"], "the exact bytes")
	require.Equal(t, "w6nD", wire["stderr_base64"])

	// Valid UTF-8 travels as text alone.
	e.svc.ExecResult = sandbox.ExecResult{Stdout: "héllo\n"}
	a = e.do(t, http.MethodPost, "/v1/sessions/ses_test/exec", strings.NewReader(`{"command":"x"}`), nil)
	require.JSONEq(t, `{"stdout":"héllo\n","stderr":"","exit_code":0,"timed_out":false,"truncated":false}`, string(a.body))
}
