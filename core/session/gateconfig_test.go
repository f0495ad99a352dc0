package session

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/egress"
	"github.com/sandgate/sandgate/core/gatewire"
)

func TestConfigFor(t *testing.T) {
	t.Parallel()
	sid := domain.MustParseSessionID("ses_0123456789abcdefghjkmnpq")
	gh := Credential{
		ID: "cred_gh", Name: "GITHUB_TOKEN", Secret: gatewire.NewSecret("ghp_secretvalue1"),
		AllowedHosts: []string{"api.github.com", "*.githubusercontent.com"},
		Locations:    []gatewire.Location{gatewire.LocationHeaders},
	}
	oa := Credential{
		ID: "cred_oa", Name: "OPENAI_KEY", Secret: gatewire.NewSecret("sk-secretvalue2"),
		AllowedHosts: []string{"api.openai.com"},
		Locations:    []gatewire.Location{gatewire.LocationHeaders, gatewire.LocationBody},
	}
	for _, tc := range []struct {
		name string
		in   Session
		want gatewire.Config
	}{
		{
			name: "empty type reads as unrestricted",
			in:   Session{ID: sid},
			want: gatewire.Config{
				Networking:  domain.Networking{Type: domain.NetUnrestricted},
				Credentials: []gatewire.Credential{},
			},
		},
		{
			name: "limited with hosts and no credentials",
			in: Session{ID: sid, Networking: domain.Networking{
				Type: domain.NetLimited, AllowedHosts: []string{"example.com", "10.0.0.0/8"},
			}},
			want: gatewire.Config{
				Networking:  domain.Networking{Type: domain.NetLimited, AllowedHosts: []string{"example.com", "10.0.0.0/8"}},
				Credentials: []gatewire.Credential{},
			},
		},
		{
			name: "credentials in stored order",
			in: Session{ID: sid, Networking: domain.Networking{Type: domain.NetUnrestricted},
				Credentials: []Credential{gh, oa}},
			want: gatewire.Config{
				Networking: domain.Networking{Type: domain.NetUnrestricted},
				Credentials: []gatewire.Credential{
					{
						ID: "cred_gh", Placeholder: egress.Placeholder(sid, "GITHUB_TOKEN"),
						Secret:       gatewire.NewSecret("ghp_secretvalue1"),
						AllowedHosts: []string{"api.github.com", "*.githubusercontent.com"},
						Locations:    []gatewire.Location{gatewire.LocationHeaders},
					},
					{
						ID: "cred_oa", Placeholder: egress.Placeholder(sid, "OPENAI_KEY"),
						Secret:       gatewire.NewSecret("sk-secretvalue2"),
						AllowedHosts: []string{"api.openai.com"},
						Locations:    []gatewire.Location{gatewire.LocationHeaders, gatewire.LocationBody},
					},
				},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := ConfigFor(tc.in)
			require.Equal(t, tc.want, got)
			// The document passes the wire contract as the gate reads it.
			require.NoError(t, got.Validate())
			body, err := json.Marshal(got)
			require.NoError(t, err)
			parsed, err := gatewire.Parse(body)
			require.NoError(t, err)
			require.Equal(t, got, parsed)
			// Stable across calls: a re-provisioned sandbox keeps its
			// placeholders.
			require.Equal(t, got, ConfigFor(tc.in))
		})
	}
}

func TestConfigForPlaceholderIsPinned(t *testing.T) {
	t.Parallel()
	s := Session{ID: domain.MustParseSessionID("ses_abc"), Credentials: []Credential{{
		ID: "c1", Name: "api-key", Secret: gatewire.NewSecret("secretvalue"),
		AllowedHosts: []string{"example.com"}, Locations: []gatewire.Location{gatewire.LocationBody},
	}}}
	// The same value TestPlaceholder pins: the credential's name, not its
	// id, feeds the derivation.
	require.Equal(t, "sgph_k6jslb5pj4hmdv36wmpoiwdr34", ConfigFor(s).Credentials[0].Placeholder)
	s.Credentials[0].ID = "c2"
	require.Equal(t, "sgph_k6jslb5pj4hmdv36wmpoiwdr34", ConfigFor(s).Credentials[0].Placeholder)
}

func TestConfigForDoesNotAlias(t *testing.T) {
	t.Parallel()
	s := Session{
		ID:         domain.MustParseSessionID("ses_abc"),
		Networking: domain.Networking{Type: domain.NetLimited, AllowedHosts: []string{"a.example"}},
		Credentials: []Credential{{
			ID: "c1", Name: "n", Secret: gatewire.NewSecret("secretvalue"),
			AllowedHosts: []string{"b.example"}, Locations: []gatewire.Location{gatewire.LocationHeaders},
		}},
	}
	got := ConfigFor(s)
	got.Networking.AllowedHosts[0] = "x"
	got.Credentials[0].AllowedHosts[0] = "y"
	require.Equal(t, "a.example", s.Networking.AllowedHosts[0])
	require.Equal(t, "b.example", s.Credentials[0].AllowedHosts[0])
}

func TestConfigForSecretRedacted(t *testing.T) {
	t.Parallel()
	s := Session{ID: domain.MustParseSessionID("ses_abc"), Credentials: []Credential{{
		ID: "c1", Name: "n", Secret: gatewire.NewSecret("topsecretvalue"),
		AllowedHosts: []string{"example.com"}, Locations: []gatewire.Location{gatewire.LocationHeaders},
	}}}
	got := ConfigFor(s)
	require.Equal(t, "topsecretvalue", got.Credentials[0].Secret.Reveal())
	require.NotContains(t, fmt.Sprintf("%v %+v %#v", got, got, got), "topsecretvalue")
}

// TestConfigForJSONIsPinned: the document a gate fetches, byte for byte.
func TestConfigForJSONIsPinned(t *testing.T) {
	t.Parallel()
	s := Session{
		ID:         domain.MustParseSessionID("ses_pinned"),
		Networking: domain.Networking{Type: domain.NetLimited, AllowedHosts: []string{"a.example", "*.b.example:443"}},
		Credentials: []Credential{{
			ID: "cred_1", Name: "API_KEY", Secret: gatewire.NewSecret("secretvalue1"),
			AllowedHosts: []string{"a.example", "*.b.example"}, Locations: []gatewire.Location{gatewire.LocationBody, gatewire.LocationHeaders},
		}},
	}
	b, err := json.Marshal(ConfigFor(s))
	require.NoError(t, err)
	//nolint:testifylint // byte for byte, not JSONEq: the document is pinned
	require.Equal(t, `{"networking":{"type":"limited","allowed_hosts":["a.example","*.b.example:443"]},"credentials":[`+
		`{"id":"cred_1","placeholder":"sgph_u3adihmpvmbmr2jtglxqxxbjdy","secret":"secretvalue1",`+
		`"allowed_hosts":["a.example","*.b.example"],"locations":["body","headers"]}]}`, string(b))
}
