package egress

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/gatewire"
)

func target(t *testing.T, hostport string) Target {
	t.Helper()
	tg, err := ParseTarget(hostport)
	require.NoError(t, err)
	return tg
}

func TestCredentialsBinding(t *testing.T) {
	t.Parallel()
	p := mustCompile(t, testConfig(domain.NetLimited, "*.example.com", "10.9.9.9", "other.org"))
	in := "Bearer " + ph1 + " " + ph2

	b := p.Credentials(target(t, "api.example.com:443"))
	require.Equal(t, []string{"c1", "c2"}, b.IDs())
	out, used := b.Substituter(gatewire.LocationHeaders).ReplaceString(in)
	require.Equal(t, "Bearer "+secret1+" "+secret2, out)
	require.Equal(t, []string{"c1", "c2"}, used)
	out, used = b.Substituter(gatewire.LocationBody).ReplaceString(in)
	require.Equal(t, "Bearer "+secret1+" "+ph2, out, "c2 is not enabled for bodies")
	require.Equal(t, []string{"c1"}, used)

	b = p.Credentials(target(t, "x.example.com:443"))
	require.Equal(t, []string{"c2"}, b.IDs())
	out, _ = b.Substituter(gatewire.LocationHeaders).ReplaceString(in)
	require.Equal(t, "Bearer "+ph1+" "+secret2, out, "c1 is not bound to x.example.com")

	b = p.Credentials(target(t, "10.9.9.9:80"))
	require.Equal(t, []string{"c2"}, b.IDs())

	// Admitted but unbound: placeholders travel literally, the tunnel stays opaque.
	b = p.Credentials(target(t, "other.org:443"))
	require.True(t, b.Empty())
	out, used = b.Substituter(gatewire.LocationHeaders).ReplaceString(in)
	require.Equal(t, in, out)
	require.Empty(t, used)

	// A credential's hosts never widen the policy.
	narrow := mustCompile(t, testConfig(domain.NetLimited, "other.org"))
	require.True(t, narrow.Credentials(target(t, "api.example.com:443")).Empty())
	require.True(t, (*Policy)(nil).Credentials(target(t, "api.example.com:443")).Empty())
}

// TestCredentialsBindingPorts: a credential entry without a port binds on
// every port the policy admits for its host; one with a port binds there
// only; a port the policy refuses binds nothing.
func TestCredentialsBindingPorts(t *testing.T) {
	t.Parallel()
	cfg := testConfig(domain.NetLimited, "api.example.com:*")
	cfg.Credentials[1].AllowedHosts = []string{"api.example.com:8443"}
	p := mustCompile(t, cfg)
	require.Equal(t, []string{"c1"}, p.Credentials(target(t, "api.example.com:443")).IDs())
	require.Equal(t, []string{"c1", "c2"}, p.Credentials(target(t, "api.example.com:8443")).IDs())
	narrow := mustCompile(t, testConfig(domain.NetLimited, "api.example.com"))
	require.True(t, narrow.Credentials(target(t, "api.example.com:8443")).Empty())
}

func TestRedactor(t *testing.T) {
	t.Parallel()
	p := mustCompile(t, testConfig(domain.NetUnrestricted))
	r := p.Credentials(target(t, "api.example.com:443")).Redactor()
	resp := "echo: " + secret1 + " and " + secret2
	require.Equal(t, "echo: "+ph1+" and "+ph2, chunked(r, resp, 3))
}

func TestSubstituteBody(t *testing.T) {
	t.Parallel()
	p := mustCompile(t, testConfig(domain.NetUnrestricted))
	s := p.Credentials(target(t, "api.example.com:443")).Substituter(gatewire.LocationBody)
	out, used, err := SubstituteBody(s, strings.NewReader(`{"key":"`+ph1+`"}`))
	require.NoError(t, err)
	require.JSONEq(t, `{"key":"`+secret1+`"}`, string(out))
	require.Equal(t, []string{"c1"}, used)

	_, _, err = SubstituteBody(s, strings.NewReader(strings.Repeat("x", MaxBodyBytes)))
	require.NoError(t, err, "exactly the limit is substituted")
	_, _, err = SubstituteBody(s, strings.NewReader(strings.Repeat("x", MaxBodyBytes+1)))
	require.ErrorIs(t, err, ErrBodyTooLarge)
	_, _, err = SubstituteBody(s, errReader{})
	require.ErrorIs(t, err, errRead)
}

var errRead = errorString("read failed")

type errorString string

func (e errorString) Error() string { return string(e) }

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errRead }

func TestCredentialPatterns(t *testing.T) {
	t.Parallel()
	var none *Policy
	require.Nil(t, none.CredentialPatterns())
	cfg := testConfig(domain.NetLimited, "api.example.com")
	cfg.Credentials[1].AllowedHosts = []string{"*.example.com", "api.example.com", "10.9.9.9"}
	var got []string
	for _, p := range mustCompile(t, cfg).CredentialPatterns() {
		got = append(got, p.String())
	}
	require.Equal(t, []string{"api.example.com", "*.example.com", "10.9.9.9"}, got)
	require.Empty(t, mustCompile(t, gatewire.Config{Networking: domain.Networking{Type: domain.NetUnrestricted}}).CredentialPatterns())
}
