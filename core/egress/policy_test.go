package egress

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/gatewire"
)

var (
	ph1 = Placeholder(domain.MustParseSessionID("ses_test"), "api-key")
	ph2 = Placeholder(domain.MustParseSessionID("ses_test"), "other")
)

const (
	secret1 = "SECRET-ONE-VALUE"
	secret2 = "SECRET-TWO!"
)

func testConfig(typ domain.NetworkType, hosts ...string) gatewire.Config {
	return gatewire.Config{
		Networking: domain.Networking{Type: typ, AllowedHosts: hosts},
		Credentials: []gatewire.Credential{
			{ID: "c1", Placeholder: ph1, Secret: gatewire.NewSecret(secret1), AllowedHosts: []string{"api.example.com"}, Locations: []gatewire.Location{gatewire.LocationHeaders, gatewire.LocationBody}},
			{ID: "c2", Placeholder: ph2, Secret: gatewire.NewSecret(secret2), AllowedHosts: []string{"*.example.com", "10.9.9.9"}, Locations: []gatewire.Location{gatewire.LocationHeaders}},
		},
	}
}

func mustCompile(t *testing.T, cfg gatewire.Config, deny ...string) *Policy {
	t.Helper()
	var opts Options
	for _, d := range deny {
		opts.Deny = append(opts.Deny, netip.MustParsePrefix(d))
	}
	p, err := Compile(cfg, opts)
	require.NoError(t, err)
	return p
}

func TestCompileRefuses(t *testing.T) {
	t.Parallel()
	_, err := Compile(gatewire.Config{}, Options{})
	require.ErrorIs(t, err, gatewire.ErrInvalid)
	_, err = Compile(testConfig(domain.NetLimited, "127.1"), Options{})
	require.ErrorIs(t, err, ErrInvalidPattern)
	require.ErrorIs(t, err, gatewire.ErrInvalid)
	require.Contains(t, err.Error(), "networking.allowed_hosts[0]")
	cfg := testConfig(domain.NetLimited)
	cfg.Credentials[1].AllowedHosts = []string{"ok.com", "*.*.x"}
	_, err = Compile(cfg, Options{})
	require.ErrorIs(t, err, ErrInvalidPattern)
	require.Contains(t, err.Error(), "credentials[1].allowed_hosts[1]")
	require.NotContains(t, err.Error(), secret2)
}

func TestDecide(t *testing.T) {
	t.Parallel()
	limited := mustCompile(t, testConfig(domain.NetLimited, "api.example.com", "*.svc.example", "10.9.9.9:8080", "172.30.0.0/16", "127.0.0.1", "db.example:5432", "10.7.0.0/16:*", "[fd00::/8]:9000"), "172.30.0.2/32", "10.0.0.5/32")
	open := mustCompile(t, testConfig(domain.NetUnrestricted, "10.9.9.9"), "10.0.0.5/32")
	pub := netip.MustParseAddr("93.184.216.34")
	for _, tc := range []struct {
		p      *Policy
		target string
		addr   string
		want   Verdict
	}{
		{nil, "api.example.com:443", "93.184.216.34", Verdict{false, RuleNoConfig}},
		{limited, "api.example.com:443", "93.184.216.34", Verdict{true, "allowed_hosts:api.example.com"}},
		{limited, "API.EXAMPLE.COM.:443", "93.184.216.34", Verdict{true, "allowed_hosts:api.example.com"}},
		{limited, "x.api.example.com:443", "93.184.216.34", Verdict{false, RuleNotAllowed}},
		{limited, "a.b.svc.example:80", "93.184.216.34", Verdict{true, "allowed_hosts:*.svc.example"}},
		{limited, "svc.example:80", "93.184.216.34", Verdict{false, RuleNotAllowed}},
		{limited, "api.example.com:443", "10.1.1.1", Verdict{false, "floor:private"}},
		{limited, "api.example.com:443", "127.0.0.2", Verdict{false, "floor:loopback"}},
		{limited, "api.example.com:443", "127.0.0.1", Verdict{true, "opened:127.0.0.1"}},
		{limited, "api.example.com:443", "::ffff:127.0.0.2", Verdict{false, "floor:loopback"}},
		{limited, "10.9.9.9:8080", "10.9.9.9", Verdict{true, "opened:10.9.9.9:8080"}},
		{limited, "[::ffff:10.9.9.9]:8080", "::ffff:10.9.9.9", Verdict{true, "opened:10.9.9.9:8080"}},
		// ports: a bare entry admits 80 and 443 only
		{limited, "api.example.com:80", "93.184.216.34", Verdict{true, "allowed_hosts:api.example.com"}},
		{limited, "api.example.com:22", "93.184.216.34", Verdict{false, RuleNotAllowed}},
		{limited, "api.example.com:8443", "93.184.216.34", Verdict{false, RuleNotAllowed}},
		{limited, "a.svc.example:8080", "93.184.216.34", Verdict{false, RuleNotAllowed}},
		{limited, "10.9.9.9:80", "10.9.9.9", Verdict{false, RuleNotAllowed}},
		{limited, "172.30.1.1:22", "172.30.1.1", Verdict{false, RuleNotAllowed}},
		{limited, "db.example:5432", "93.184.216.34", Verdict{true, "allowed_hosts:db.example:5432"}},
		{limited, "db.example:443", "93.184.216.34", Verdict{false, RuleNotAllowed}},
		{limited, "db.example:5432", "127.0.0.1", Verdict{false, "floor:loopback"}}, // 127.0.0.1 is opened on 80 and 443 only
		{limited, "db.example:5432", "10.7.3.3", Verdict{true, "opened:10.7.0.0/16:*"}},
		{limited, "10.7.3.3:22", "10.7.3.3", Verdict{true, "opened:10.7.0.0/16:*"}},
		{limited, "[fd12::1]:9000", "fd12::1", Verdict{true, "opened:[fd00::/8]:9000"}},
		{limited, "[fd12::1]:443", "fd12::1", Verdict{false, RuleNotAllowed}},
		{limited, "10.9.9.8:8080", "10.9.9.8", Verdict{false, RuleNotAllowed}},
		{limited, "172.30.1.1:80", "172.30.1.1", Verdict{true, "opened:172.30.0.0/16"}},
		{limited, "172.30.0.2:80", "172.30.0.2", Verdict{false, RuleDeniedAddress}},
		{limited, "[::ffff:172.30.0.2]:80", "::ffff:172.30.0.2", Verdict{false, RuleDeniedAddress}},
		{limited, "api.example.com:443", "64:ff9b::ac1e:2", Verdict{false, RuleDeniedAddress}},
		{limited, "2130706433:80", "127.0.0.1", Verdict{false, RuleNonCanonicalIP}},
		{limited, "api.example.com", "93.184.216.34", Verdict{false, RuleInvalidHost}},
		{open, "anything.example.org:443", "93.184.216.34", Verdict{true, RuleUnrestricted}},
		{open, "anything.example.org:443", "169.254.169.254", Verdict{false, "floor:metadata"}},
		{open, "anything.example.org:443", "fd00:ec2::254", Verdict{false, "floor:metadata"}},
		{open, "anything.example.org:443", "100.64.1.1", Verdict{false, "floor:cgnat"}},
		{open, "anything.example.org:443", "0.0.0.0", Verdict{false, "floor:unspecified"}},
		{open, "anything.example.org:443", "::", Verdict{false, "floor:unspecified"}},
		{open, "anything.example.org:443", "ff02::1", Verdict{false, "floor:multicast"}},
		{open, "anything.example.org:443", "255.255.255.255", Verdict{false, "floor:broadcast"}},
		{open, "anything.example.org:443", "2002:a00:1::", Verdict{false, "floor:private"}},
		{open, "10.9.9.9:80", "10.9.9.9", Verdict{true, "opened:10.9.9.9"}},
		{open, "10.9.9.9:22", "10.9.9.9", Verdict{false, "floor:private"}},
		{open, "anything.example.org:22", "93.184.216.34", Verdict{true, RuleUnrestricted}},
		{open, "10.0.0.5:80", "10.0.0.5", Verdict{false, RuleDeniedAddress}},
		{open, "0x7f.1:80", "127.0.0.1", Verdict{false, RuleNonCanonicalIP}},
		{open, "[fe80::1%25eth0]:80", "fe80::1", Verdict{false, RuleInvalidHost}},
	} {
		addr := netip.MustParseAddr(tc.addr)
		require.Equal(t, tc.want, Decide(tc.p, tc.target, addr), "%s -> %s", tc.target, tc.addr)
	}
	require.Equal(t, Verdict{false, RuleNoConfig}, (*Policy)(nil).AdmitAddr(netip.AddrPortFrom(pub, 443)))
	require.Equal(t, Verdict{false, "floor:invalid"}, open.AdmitAddr(netip.AddrPort{}))
	require.Equal(t, "allowed (public)", open.AdmitAddr(netip.AddrPortFrom(pub, 443)).String())
	require.Equal(t, "denied (no-config)", Decide(nil, "a.com:1", pub).String())
}

func TestVerdictReason(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"allowed_hosts:api.example.com": gatewire.ReasonAllowedHost,
		"opened:10.0.0.0/8":             gatewire.ReasonOpened,
		"floor:loopback":                gatewire.ReasonFloor,
		RuleNotAllowed:                  gatewire.ReasonNotAllowed,
		RuleNoConfig:                    gatewire.ReasonNoConfig,
		RuleUnrestricted:                gatewire.ReasonUnrestricted,
		RuleInvalidHost:                 gatewire.ReasonInvalidHost,
		RuleNonCanonicalIP:              gatewire.ReasonNonCanonicalIP,
		RuleDeniedAddress:               gatewire.ReasonDeniedAddress,
		"something-new":                 gatewire.ReasonOther,
	}
	for rule, want := range tests {
		require.Equal(t, want, Verdict{Rule: rule}.Reason(), rule)
	}
}
