package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/ports/portfake"
)

// TestAccessLogClipsSessionID: the id in the path is the client's string,
// as long as the request line allows; the log line and the span carry it
// clipped, like the path.
func TestAccessLogClipsSessionID(t *testing.T) {
	t.Parallel()
	base, rec, logs := startedTraced(t, portfake.NewProvider())
	long := "ses_" + strings.Repeat("x", 8000)
	status, _ := call(t, http.MethodGet, base+"/v1/sessions/"+long, testToken, "")
	require.Equal(t, http.StatusBadRequest, status)

	var seen bool
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), line)
		if sid, ok := m["session_id"].(string); ok && m["msg"] == "api request" {
			seen = true
			requireClipped(t, long, sid)
		}
	}
	require.True(t, seen, "the request was logged with its session id")
	for _, s := range rec.Ended() {
		if v := attr(s, "sandgate.session_id"); v != "" {
			requireClipped(t, long, v)
		}
	}
}

// requireClipped checks got is s clipped for the log line without printing s on failure.
func requireClipped(t *testing.T, s, got string) {
	t.Helper()
	require.Len(t, got, len(domain.ClipTo(s, maxLogValue)), "clipped")
	require.True(t, strings.HasPrefix(s, strings.TrimSuffix(got, "…")), "a prefix of the id")
}
