package gatewire

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/domain"
)

const (
	testSecret = "s3cr3t-VALUE-xyz"
	testPH     = "sgph_abcdefghijklmnopqrstuvwxyz"
)

func validConfig() Config {
	return Config{
		Version:    "v1",
		Networking: domain.Networking{Type: domain.NetLimited, AllowedHosts: []string{"api.example.com"}},
		Credentials: []Credential{{
			ID:           "cred-1",
			Placeholder:  testPH,
			Secret:       NewSecret(testSecret),
			AllowedHosts: []string{"api.example.com"},
			Locations:    []Location{LocationHeaders, LocationBody},
		}},
	}
}

func TestValidateAcceptsGoodConfigs(t *testing.T) {
	t.Parallel()
	require.NoError(t, validConfig().Validate())
	require.NoError(t, Config{Networking: domain.Networking{Type: domain.NetUnrestricted}}.Validate())
}

func TestValidateNamesTheField(t *testing.T) {
	t.Parallel()
	second := validConfig().Credentials[0]
	second.ID, second.Placeholder = "cred-2", "sgph_0000000000000000"
	for _, tc := range []struct {
		name  string
		edit  func(*Config)
		field string
	}{
		{"version", func(c *Config) { c.Version = "a\nb" }, "version"},
		{"long version", func(c *Config) { c.Version = strings.Repeat("v", 129) }, "version"},
		{"missing type", func(c *Config) { c.Networking.Type = "" }, "networking.type"},
		{"bad type", func(c *Config) { c.Networking.Type = "open" }, "networking.type"},
		{"bad host", func(c *Config) { c.Networking.AllowedHosts = []string{"http://x"} }, "networking.allowed_hosts[0]"},
		{"too many", func(c *Config) { c.Credentials = make([]Credential, MaxCredentials+1) }, "credentials: 257 entries"},
		{"empty id", func(c *Config) { c.Credentials[0].ID = "" }, "credentials[0].id"},
		{"id chars", func(c *Config) { c.Credentials[0].ID = "a b" }, "credentials[0].id"},
		{"no prefix", func(c *Config) { c.Credentials[0].Placeholder = "abcdefghijklmnopqrstu" }, "credentials[0].placeholder"},
		{"short placeholder", func(c *Config) { c.Credentials[0].Placeholder = "sgph_abc" }, "credentials[0].placeholder"},
		{"placeholder chars", func(c *Config) { c.Credentials[0].Placeholder = "sgph_ABCDEFGHIJKLMNOPQRST" }, "credentials[0].placeholder"},
		{"empty secret", func(c *Config) { c.Credentials[0].Secret = Secret{} }, "credentials[0].secret"},
		{"short secret", func(c *Config) { c.Credentials[0].Secret = NewSecret("1234567") }, "credentials[0].secret"},
		{"long secret", func(c *Config) { c.Credentials[0].Secret = NewSecret(strings.Repeat("x", MaxSecretBytes+1)) }, "credentials[0].secret"},
		{"secret with placeholder", func(c *Config) { c.Credentials[0].Secret = NewSecret("xxsgph_xxxx") }, "credentials[0].secret"},
		{"no hosts", func(c *Config) { c.Credentials[0].AllowedHosts = nil }, "credentials[0].allowed_hosts"},
		{"bad cred host", func(c *Config) { c.Credentials[0].AllowedHosts = []string{"a b"} }, "credentials[0].allowed_hosts[0]"},
		{"no locations", func(c *Config) { c.Credentials[0].Locations = nil }, "credentials[0].locations"},
		{"bad location", func(c *Config) { c.Credentials[0].Locations = []Location{"query"} }, "credentials[0].locations[0]"},
		{"dup location", func(c *Config) { c.Credentials[0].Locations = []Location{"body", "body"} }, "credentials[0].locations[1]"},
		{"dup id", func(c *Config) {
			s := second
			s.ID = "cred-1"
			c.Credentials = append(c.Credentials, s)
		}, "credentials[1].id"},
		{"dup placeholder", func(c *Config) {
			s := second
			s.Placeholder = testPH
			c.Credentials = append(c.Credentials, s)
		}, "credentials[1].placeholder"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := validConfig()
			tc.edit(&c)
			err := c.Validate()
			require.ErrorIs(t, err, ErrInvalid)
			require.Contains(t, err.Error(), tc.field)
			require.NotContains(t, err.Error(), testSecret)
		})
	}
}

func TestParseRoundTrip(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(validConfig())
	require.NoError(t, err)
	require.Contains(t, string(b), `"secret":"`+testSecret+`"`)
	require.Contains(t, string(b), `"allowed_hosts":["api.example.com"]`)
	require.Contains(t, string(b), `"locations":["headers","body"]`)
	c, err := Parse(b)
	require.NoError(t, err)
	require.Equal(t, validConfig(), c)
	require.True(t, c.Credentials[0].Enabled(LocationBody))
	require.False(t, Credential{Locations: []Location{LocationHeaders}}.Enabled(LocationBody))
}

func TestParseRefusesWithoutQuotingInput(t *testing.T) {
	t.Parallel()
	for name, doc := range map[string]string{
		"syntax":        `{"credentials":[{"secret":"` + testSecret + `"x}]}`,
		"secret type":   `{"credentials":[{"secret":12345678}]}`,
		"field type":    `{"networking":{"type":5}}`,
		"trailing":      `{"networking":{"type":"limited"}} {}`,
		"invalid":       `{"networking":{"type":"limited"},"credentials":[{"id":"a","placeholder":"` + testPH + `","secret":"` + testSecret + `","allowed_hosts":[],"locations":["body"]}]}`,
		"empty":         ``,
		"too large":     strings.Repeat(" ", MaxConfigBytes+1),
		"not an object": `[1]`,
	} {
		_, err := Parse([]byte(doc))
		require.ErrorIs(t, err, ErrInvalid, name)
		require.NotContains(t, err.Error(), testSecret, name)
		require.NotContains(t, err.Error(), "x}", name)
	}
}
