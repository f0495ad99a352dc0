package egress

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseHost(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want string // canonical String(); "" with err set
		ip   bool
		err  error
	}{
		{in: "Example.COM", want: "example.com"},
		{in: "example.com.", want: "example.com"},
		{in: "a_b-c.example", want: "a_b-c.example"},
		{in: "1e100.net", want: "1e100.net"},
		{in: "127.0.0.1.nip.io", want: "127.0.0.1.nip.io"},
		{in: "8.8.8.8", want: "8.8.8.8", ip: true},
		{in: "8.8.8.8.", want: "8.8.8.8", ip: true},
		{in: "[::1]", want: "::1", ip: true},
		{in: "::ffff:127.0.0.1", want: "::ffff:127.0.0.1", ip: true},
		{in: "[2001:DB8::1]", want: "2001:db8::1", ip: true},
		{in: "2130706433", err: ErrNonCanonicalIP},
		{in: "0x7f000001", err: ErrNonCanonicalIP},
		{in: "0X7F000001", err: ErrNonCanonicalIP},
		{in: "127.1", err: ErrNonCanonicalIP},
		{in: "0177.0.0.1", err: ErrNonCanonicalIP},
		{in: "127.0.0.01", err: ErrNonCanonicalIP},
		{in: "1.2.3", err: ErrNonCanonicalIP},
		{in: "0x7f.0.0.1", err: ErrNonCanonicalIP},
		{in: "1.2.3.4.5", err: ErrNonCanonicalIP},
		{in: "256.1.1.1", err: ErrNonCanonicalIP},
		{in: "foo.0x", err: ErrNonCanonicalIP},
		{in: "", err: ErrInvalidHost},
		{in: ".", err: ErrInvalidHost},
		{in: "example.com..", err: ErrInvalidHost},
		{in: ".example.com", err: ErrInvalidHost},
		{in: "a..b", err: ErrInvalidHost},
		{in: "exa mple.com", err: ErrInvalidHost},
		{in: "ex%41mple.com", err: ErrInvalidHost},
		{in: "bücher.de", err: ErrInvalidHost},
		{in: "a@b", err: ErrInvalidHost},
		{in: "[::1", err: ErrInvalidHost},
		{in: "[1.2.3.4]", err: ErrInvalidHost},
		{in: "fe80::1%eth0", err: ErrInvalidHost},
		{in: "1:2", err: ErrInvalidHost},
		{in: string(make([]byte, 64)) + ".com", err: ErrInvalidHost},
		{in: "a." + string(make([]byte, 0)) + "b", want: "a.b"},
	} {
		h, err := ParseHost(tc.in)
		if tc.err != nil {
			require.ErrorIs(t, err, tc.err, "%q", tc.in)
			continue
		}
		require.NoError(t, err, "%q", tc.in)
		require.Equal(t, tc.want, h.String(), "%q", tc.in)
		require.Equal(t, tc.ip, h.IsIP(), "%q", tc.in)
	}
	long := ""
	for len(long) < 260 {
		long += "abcdefghi."
	}
	_, err := ParseHost(long + "com")
	require.ErrorIs(t, err, ErrInvalidHost)
	_, err = ParseHost("a" + string(make([]byte, 63)))
	require.ErrorIs(t, err, ErrInvalidHost)
}

func TestParseTarget(t *testing.T) {
	t.Parallel()
	tg, err := ParseTarget("API.example.com:443")
	require.NoError(t, err)
	require.Equal(t, Target{Host: Host{Name: "api.example.com"}, Port: 443}, tg)
	tg, err = ParseTarget("[::1]:8080")
	require.NoError(t, err)
	require.Equal(t, Target{Host: Host{Addr: netip.MustParseAddr("::1")}, Port: 8080}, tg)
	for _, bad := range []string{
		"example.com", "example.com:", "example.com:0", "example.com:65536", "example.com:+80", "example.com:http",
		"::1:80", "[::1]80", "[::1]", "[1.2.3.4]:80", "a:b:80", ":80", "[::1:80",
	} {
		_, err := ParseTarget(bad)
		require.ErrorIs(t, err, ErrInvalidHost, "%q", bad)
	}
	_, err = ParseTarget("2130706433:80")
	require.ErrorIs(t, err, ErrNonCanonicalIP)
}
