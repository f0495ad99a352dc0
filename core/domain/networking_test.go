package domain

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNetworkingNormalizeAndLimited(t *testing.T) {
	t.Parallel()
	require.Equal(t, NetUnrestricted, Networking{}.Normalize().Type)
	require.False(t, Networking{}.Limited())
	require.True(t, Networking{Type: NetLimited}.Limited())
	require.Equal(t, NetLimited, Networking{Type: NetLimited}.Normalize().Type)
}

func TestNetworkingJSON(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(Networking{Type: NetLimited, AllowedHosts: []string{"api.example.com"}})
	require.NoError(t, err)
	require.JSONEq(t, `{"type":"limited","allowed_hosts":["api.example.com"]}`, string(b))
	var n Networking
	require.NoError(t, json.Unmarshal([]byte(`{"type":"unrestricted"}`), &n))
	require.Equal(t, NetUnrestricted, n.Type)
}

func TestNetworkingValidate(t *testing.T) {
	t.Parallel()
	for _, ok := range []Networking{
		{},
		{Type: NetUnrestricted},
		{Type: NetLimited, AllowedHosts: []string{"api.example.com", "*.example.com", "10.0.0.1", "10.0.0.0/8", "::1", "example.com."}},
	} {
		require.NoError(t, ok.Validate(), "%+v", ok)
	}
	many := make([]string, maxAllowedHosts+1)
	for i := range many {
		many[i] = "a.example"
	}
	for _, tc := range []struct {
		n    Networking
		want string
	}{
		{Networking{Type: "open"}, "networking.type"},
		{Networking{Type: NetLimited, AllowedHosts: []string{""}}, "allowed_hosts[0]"},
		{Networking{Type: NetLimited, AllowedHosts: []string{"ok.example", "a b"}}, "allowed_hosts[1]"},
		{Networking{Type: NetLimited, AllowedHosts: []string{"https://x.example"}}, "allowed_hosts[0]"},
		{Networking{Type: NetLimited, AllowedHosts: []string{"user@x.example"}}, "allowed_hosts[0]"},
		{Networking{Type: NetLimited, AllowedHosts: []string{strings.Repeat("a", 300)}}, "allowed_hosts[0]"},
		{Networking{Type: NetLimited, AllowedHosts: many}, "at most"},
	} {
		require.ErrorContains(t, tc.n.Validate(), tc.want)
	}
}
