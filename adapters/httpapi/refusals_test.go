package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRefusalsAreSampled: a flood of requests without the token costs a
// bounded number of log lines, and the next line says how many were left
// out (issue 11 item 13: ~360 B of log per refused request).
func TestRefusalsAreSampled(t *testing.T) {
	t.Parallel()
	e := newAPI(t, APIOptions{Token: apiToken, Refusals: NewRefusalSampler(1, 5)})
	const flood = 200
	start := time.Now()
	for range flood {
		a := e.do(t, http.MethodGet, "/v1/sessions", nil, http.Header{"Authorization": {"Bearer wrong"}})
		require.Equal(t, http.StatusUnauthorized, a.status)
	}
	elapsed := time.Since(start)
	time.Sleep(1100 * time.Millisecond) // a token comes back
	require.Equal(t, http.StatusUnauthorized, e.do(t, http.MethodGet, "/v1/sessions", nil, http.Header{"Authorization": {"Bearer wrong"}}).status)

	var logged, reported int64
	for _, line := range strings.Split(strings.TrimSpace(e.logs()), "\n") {
		var m struct {
			Msg        string `json:"msg"`
			Suppressed int64  `json:"suppressed"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &m))
		if m.Msg == "api request refused" {
			logged++
			reported += m.Suppressed
		}
	}
	require.LessOrEqual(t, logged, int64(5+elapsed.Seconds()+2), "the burst and one a second")
	require.Equal(t, int64(flood+1), logged+reported, "every refusal is logged or counted")
}
