package session

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/gatewire"
	"github.com/stretchr/testify/require"
)

var testSID = domain.MustParseSessionID("ses_0123456789abcdefghjkmnpq")

func validSession() Session {
	return Session{
		ID:         testSID,
		Networking: domain.Networking{Type: domain.NetLimited, AllowedHosts: []string{"api.example.com"}},
		Credentials: []Credential{{
			ID: "cred_1", Name: "GITHUB_TOKEN", Secret: gatewire.NewSecret("ghp_secret"),
			AllowedHosts: []string{"api.github.com", "*.github.com"},
			Locations:    []gatewire.Location{gatewire.LocationHeaders, gatewire.LocationBody},
		}},
	}
}

func TestSessionValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		mutate func(*Session)
		want   string // "" = valid
	}{
		{"valid", func(*Session) {}, ""},
		{"no credentials", func(s *Session) { s.Credentials = nil }, ""},
		{"zero networking", func(s *Session) { s.Networking = domain.Networking{} }, ""},
		{"empty id", func(s *Session) { s.ID = domain.ID{} }, "session id is empty"},
		{"bad networking", func(s *Session) { s.Networking.Type = "open" }, "networking.type"},
		{"too many credentials", func(s *Session) { s.Credentials = make([]Credential, gatewire.MaxCredentials+1) }, "credentials: 257 entries"},
		{"empty credential id", func(s *Session) { s.Credentials[0].ID = "" }, "credentials[0].id"},
		{"credential id with space", func(s *Session) { s.Credentials[0].ID = "a b" }, "credentials[0].id \"a b\": character at offset 1"},
		{"long name", func(s *Session) { s.Credentials[0].Name = strings.Repeat("n", 257) }, "credentials[0].name \"" + strings.Repeat("n", 64) + "\": must be 1 to 256"},
		{"empty secret", func(s *Session) { s.Credentials[0].Secret = gatewire.NewSecret("") }, "credentials[0].secret: 0 bytes, want 8 to 8192"},
		{"short secret", func(s *Session) { s.Credentials[0].Secret = gatewire.NewSecret("1234567") }, "credentials[0].secret: 7 bytes, want 8 to"},
		{"placeholder in secret", func(s *Session) { s.Credentials[0].Secret = gatewire.NewSecret("abc sgph_xyz") }, "must not contain \"sgph_\""},
		{"huge secret", func(s *Session) {
			s.Credentials[0].Secret = gatewire.NewSecret(strings.Repeat("s", gatewire.MaxSecretBytes+1))
		}, "credentials[0].secret"},
		{"no hosts", func(s *Session) { s.Credentials[0].AllowedHosts = nil }, "credentials[0].allowed_hosts: 0 entries, want 1 to 64"},
		{"too many hosts", func(s *Session) { s.Credentials[0].AllowedHosts = make([]string, gatewire.MaxCredentialHosts+1) }, "credentials[0].allowed_hosts: 65 entries, want 1 to 64"},
		{"bad host", func(s *Session) { s.Credentials[0].AllowedHosts = []string{"http://x"} }, "credentials[0].allowed_hosts[0]"},
		{"no locations", func(s *Session) { s.Credentials[0].Locations = nil }, "credentials[0].locations: empty"},
		{"unknown location", func(s *Session) { s.Credentials[0].Locations = []gatewire.Location{"query"} }, `credentials[0].locations[0]: "query": want`},
		{"duplicate location", func(s *Session) {
			s.Credentials[0].Locations = []gatewire.Location{gatewire.LocationBody, gatewire.LocationBody}
		}, "locations[1]: \"body\": want \"headers\" or \"body\", each once"},
		{"duplicate id", func(s *Session) {
			c := s.Credentials[0]
			c.Name = "OTHER"
			s.Credentials = append(s.Credentials, c)
		}, "credentials[1].id \"cred_1\": duplicate"},
		{"duplicate name", func(s *Session) {
			c := s.Credentials[0]
			c.ID = "cred_2"
			s.Credentials = append(s.Credentials, c)
		}, "credentials[1].name \"GITHUB_TOKEN\": duplicate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := validSession()
			tc.mutate(&s)
			err := s.Validate()
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.want)
			if s.ID == testSID {
				require.ErrorIs(t, err, ErrInvalid)
			} else {
				require.ErrorIs(t, err, domain.ErrInvalidID)
			}
			require.NotContains(t, err.Error(), "ghp_secret")
		})
	}
}

func TestSecretRedacted(t *testing.T) {
	t.Parallel()
	s := validSession()
	for _, format := range []string{"%v", "%+v", "%#v", "%s", "%x", "%q"} {
		out := fmt.Sprintf(format, s)
		require.NotContains(t, out, "ghp_secret", format)
		require.Contains(t, out, "[REDACTED]", format)
	}
	require.Equal(t, "ghp_secret", s.Credentials[0].Secret.Reveal())
}
