package egress

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMatchHost(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		pattern, host string
		want          bool
	}{
		{"api.example.com", "api.example.com", true},
		{"api.example.com", "API.Example.Com", true},
		{"api.example.com", "api.example.com.", true},
		{"API.example.com.", "api.example.com", true},
		{"api.example.com", "api.example.com..", false},
		{"api.example.com", "x.api.example.com", false},
		{"api.example.com", "example.com", false},
		{"api.example.com", "api.example.com.evil.com", false},
		{"api.example.com", "apiXexample.com", false},
		{"*.example.com", "a.example.com", true},
		{"*.example.com", "a.b.c.example.com", true},
		{"*.example.com", "A.EXAMPLE.COM.", true},
		{"*.example.com", "example.com", false},
		{"*.example.com", "example.com.", false},
		{"*.example.com", ".example.com", false},
		{"*.example.com", "a..example.com", false},
		{"*.example.com", "badexample.com", false},
		{"*.example.com", "a.example.com.evil", false},
		{"*.example.com", "10.0.0.1", false},
		{"10.0.0.1", "10.0.0.1", true},
		{"10.0.0.1", "::ffff:10.0.0.1", true},
		{"10.0.0.1", "10.0.0.2", false},
		{"10.0.0.1", "167772161", false},
		{"10.0.0.1", "10.1", false},
		{"10.0.0.0/8", "10.200.3.4", true},
		{"10.0.0.0/8", "11.0.0.1", false},
		{"10.0.0.0/8", "ten.example", false},
		{"::1", "[::1]", true},
		{"::1", "0:0::1", true},
		{"fd00::/8", "fd12::5", true},
		{"fd00::/8", "fe80::1", false},
		{"example.com", "10.0.0.1", false},
		// malformed patterns never match
		{"*", "a.com", false},
		{"*.", "a.com", false},
		{"**.example.com", "a.example.com", false},
		{"*.*.example.com", "a.b.example.com", false},
		{"a*.example.com", "ab.example.com", false},
		{"*.10.0.0.1", "a.10.0.0.1", false},
		{"127.1", "127.0.0.1", false},
		{"0x7f000001", "127.0.0.1", false},
		{"10.0.0.1/8", "10.0.0.1", false},
		{"10.0.0.0/33", "10.0.0.1", false},
		{"example.com:443", "example.com", true}, // the host part; ports are Match's
		{"[::1]:8080", "::1", true},
		{"example.com:0", "example.com", false},
		{"", "", false},
	} {
		require.Equal(t, tc.want, MatchHost(tc.pattern, tc.host), "%q ~ %q", tc.pattern, tc.host)
	}
}

func TestParsePattern(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"a.com", "*.a.com", "1.2.3.4", "10.0.0.0/8", "::1", "[::1]", "fd00::/8", "::ffff:10.0.0.0/104",
		"a.com:8443", "*.a.com:*", "1.2.3.4:22", "10.0.0.0/8:5432", "[::1]:8080", "[fd00::/8]:*", "a.com:65535"} {
		p, err := ParsePattern(ok)
		require.NoError(t, err, ok)
		require.Equal(t, ok, p.String())
	}
	for _, bad := range []string{"", "*", "*.", "a..com", "1.2.3", "10.0.0.1/24", "10.0.0.0/-1", "010.0.0.0/8", "fe80::1%1", "a/b",
		"a.com:", "a.com:0", "a.com:65536", "a.com:080", "a.com:+80", "a.com:http", "a.com:**", "[::1]:", "[::1]x", "[::1", "[fd00::/8]", ":80"} {
		_, err := ParsePattern(bad)
		require.ErrorIs(t, err, ErrInvalidPattern, bad)
	}
	p, err := ParsePattern("a.com")
	require.NoError(t, err)
	require.False(t, p.Contains(netip.MustParseAddr("1.2.3.4")))
}

func TestPatternPorts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		pattern, target string
		want            bool
	}{
		{"a.com", "a.com:443", true},
		{"a.com", "a.com:80", true},
		{"a.com", "a.com:22", false},
		{"a.com", "a.com:8443", false},
		{"a.com:8443", "a.com:8443", true},
		{"a.com:8443", "a.com:443", false},
		{"a.com:*", "a.com:22", true},
		{"*.a.com:22", "x.a.com:22", true},
		{"*.a.com:22", "a.com:22", false},
		{"10.0.0.0/8:5432", "10.1.2.3:5432", true},
		{"10.0.0.0/8:5432", "10.1.2.3:5433", false},
		{"[::1]:8080", "[::1]:8080", true},
		{"::1", "[::1]:8080", false},
		{"::1", "[::1]:443", true},
	} {
		p, err := ParsePattern(tc.pattern)
		require.NoError(t, err, tc.pattern)
		tg, err := ParseTarget(tc.target)
		require.NoError(t, err, tc.target)
		require.Equal(t, tc.want, p.Match(tg), "%q ~ %q", tc.pattern, tc.target)
	}
	p, err := ParsePattern("[fd00::/8]:9000")
	require.NoError(t, err)
	require.Equal(t, "fd00::/8", p.Host())
	p, err = ParsePattern("[::1]")
	require.NoError(t, err)
	require.Equal(t, "[::1]", p.Host())
}
