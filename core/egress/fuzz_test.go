package egress

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/gatewire"
)

// FuzzMatchHost: matching never panics, a host that matches has a canonical
// form that matches too, and a wildcard never matches its apex.
func FuzzMatchHost(f *testing.F) {
	for _, s := range [][2]string{
		{"*.example.com", "a.example.com"}, {"*.example.com", "example.com"}, {"example.com", "EXAMPLE.com."},
		{"10.0.0.0/8", "10.1.2.3"}, {"::1", "[::1]"}, {"127.0.0.1", "2130706433"}, {"a..b", "a..b"},
		{"*.a", ".a"}, {"1.2.3.4", "0x01020304"}, {"fd00::/8", "::ffff:10.0.0.1"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, host string) {
		ok := MatchHost(pattern, host)
		h, err := ParseHost(host)
		if !ok {
			return
		}
		require.NoError(t, err)
		require.True(t, MatchHost(pattern, h.String()), "canonical %q of %q", h.String(), host)
		if apex, wild := strings.CutPrefix(pattern, "*."); wild {
			require.False(t, MatchHost(pattern, apex))
			require.NotEqual(t, strings.TrimSuffix(strings.ToLower(apex), "."), h.Name)
		}
		if !h.IsIP() {
			require.NotContains(t, h.Name, "..")
			require.Equal(t, strings.ToLower(h.Name), h.Name)
		}
	})
}

// fuzzPolicy binds c1 (headers, body) to api.example.com and c2 (headers)
// to *.example.com. The secrets use upper-case letters, which no placeholder
// contains, so a placeholder in the output can only come from the input.
func fuzzPolicy(f *testing.F) *Policy {
	p, err := Compile(testConfig(domain.NetLimited, "*.example.com", "other.org"), Options{})
	require.NoError(f, err)
	return p
}

// FuzzSubstitute: one pass that never panics; for a bound host no bound
// placeholder survives and re-substituting changes nothing; for an admitted
// but unbound host the input travels unchanged; chunked equals whole.
func FuzzSubstitute(f *testing.F) {
	p := fuzzPolicy(f)
	f.Add([]byte("Bearer "+ph1), "api.example.com", 3)
	f.Add([]byte(ph1+ph2+ph1[:10]+ph2), "x.example.com", 1)
	f.Add([]byte(ph1[:len(ph1)-1]+ph1), "other.org", 7)
	f.Add([]byte("sgph_sgph_"+ph2), "api.example.com", 5)
	f.Fuzz(func(t *testing.T, in []byte, host string, n int) {
		tg, err := ParseTarget(host + ":443")
		if err != nil {
			return
		}
		b := p.Credentials(tg)
		for _, loc := range []gatewire.Location{gatewire.LocationHeaders, gatewire.LocationBody} {
			s := b.Substituter(loc)
			out, used := s.Replace(in)
			require.Equal(t, string(out), chunked(s, string(in), max(1, n%64)))
			if b.Empty() {
				require.Equal(t, string(in), string(out))
				require.Empty(t, used)
				continue
			}
			for _, pr := range s.pairs {
				require.False(t, bytes.Contains(out, pr.old), "placeholder %s survived for %s", pr.id, host)
			}
			again, none := s.Replace(out)
			require.Equal(t, out, again)
			require.Empty(t, none)
		}
	})
}

// FuzzRedact: chunked and streamed (Reader) redaction equal whole redaction, and no secret
// survives it.
func FuzzRedact(f *testing.F) {
	p := fuzzPolicy(f)
	r := p.Credentials(Target{Host: Host{Name: "api.example.com"}, Port: 443}).Redactor()
	f.Add([]byte("echo "+secret1+" "+secret2), 4)
	f.Add([]byte(secret1[:5]+secret1+secret2[:3]), 1)
	f.Add([]byte("SECRET-SECRET-ONE-VALUE"), 6)
	f.Fuzz(func(t *testing.T, in []byte, n int) {
		whole, _ := r.Replace(in)
		require.Equal(t, string(whole), chunked(r, string(in), max(1, n%64)))
		streamed, err := io.ReadAll(r.Reader(&sizes{r: bytes.NewReader(in), sizes: []int{max(1, n%64), max(1, n/64%9)}}))
		require.NoError(t, err)
		require.Equal(t, string(whole), string(streamed))
		for _, pr := range r.pairs {
			require.False(t, bytes.Contains(whole, pr.old))
		}
	})
}
