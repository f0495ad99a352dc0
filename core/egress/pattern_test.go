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
		{"example.com:443", "example.com", false},
		{"", "", false},
	} {
		require.Equal(t, tc.want, MatchHost(tc.pattern, tc.host), "%q ~ %q", tc.pattern, tc.host)
	}
}

func TestParsePattern(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"a.com", "*.a.com", "1.2.3.4", "10.0.0.0/8", "::1", "[::1]", "fd00::/8", "::ffff:10.0.0.0/104"} {
		p, err := ParsePattern(ok)
		require.NoError(t, err, ok)
		require.Equal(t, ok, p.String())
	}
	for _, bad := range []string{"", "*", "*.", "a..com", "1.2.3", "10.0.0.1/24", "10.0.0.0/-1", "010.0.0.0/8", "fe80::1%1", "a/b"} {
		_, err := ParsePattern(bad)
		require.ErrorIs(t, err, ErrInvalidPattern, bad)
	}
	p, err := ParsePattern("a.com")
	require.NoError(t, err)
	require.False(t, p.Contains(netip.MustParseAddr("1.2.3.4")))
}
