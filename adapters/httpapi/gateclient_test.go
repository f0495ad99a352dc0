package httpapi

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestGateClientsIgnoreProxyVariables: the gate's own requests never go
// through a proxy the environment names (the gate is the proxy).
func TestGateClientsIgnoreProxyVariables(t *testing.T) {
	t.Parallel()
	for _, c := range []*http.Client{NewGateConfigClient("http://x/", "t").client, NewGateReportClient("http://x/", "t").client} {
		tr, ok := c.Transport.(*http.Transport)
		require.True(t, ok)
		require.Nil(t, tr.Proxy)
	}
}
