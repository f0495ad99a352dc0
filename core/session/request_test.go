package session

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/gatewire"
)

// TestValidateAllowedHosts: host:port entries are accepted end to end, and
// an entry the gate's grammar refuses is a 400 at the request, not a gate
// that denies everything.
func TestValidateAllowedHosts(t *testing.T) {
	t.Parallel()
	req := func(hosts, credHosts []string) Request {
		return Request{
			Networking:  domain.Networking{Type: domain.NetLimited, AllowedHosts: hosts},
			Credentials: []Credential{{ID: "c", Name: "KEY", Secret: gatewire.NewSecret("s3cret-value"), AllowedHosts: credHosts, Locations: []gatewire.Location{gatewire.LocationHeaders}}},
		}
	}
	ok := []string{"api.example.com", "api.example.com:8443", "*.example.com:*", "10.0.0.0/8:5432", "[fd00::/8]:443", "172.17.0.2:8080"}
	require.NoError(t, req(ok, []string{"api.example.com:8443"}).Validate(domain.MustParseSessionID("ses_a")))
	for _, bad := range []string{"a.com:0", "a.com:65536", "a..com", "127.1", "a.com:http", "[::1]:"} {
		err := req([]string{bad}, []string{"a.com"}).Validate(domain.MustParseSessionID("ses_a"))
		require.ErrorIs(t, err, ErrInvalidRequest, bad)
		require.Contains(t, err.Error(), "networking.allowed_hosts[0]", bad)
		err = req([]string{"a.com"}, []string{bad}).Validate(domain.MustParseSessionID("ses_a"))
		require.ErrorIs(t, err, ErrInvalidRequest, bad)
		require.Contains(t, err.Error(), "credentials[0].allowed_hosts[0]", bad)
	}
}
