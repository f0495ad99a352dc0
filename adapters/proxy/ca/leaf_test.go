package ca

import (
	"crypto/ecdsa"
	"crypto/x509"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var leafPatterns = []string{
	"api.example.com", "*.example.org", "10.1.2.3", "192.168.0.0/16", "2001:db8::/32", "fd00::1",
}

func TestLeafVerifies(t *testing.T) {
	t.Parallel()
	a := newCA(t, leafPatterns...)
	for _, tc := range []struct {
		host string
		dns  string // the SAN expected, or
		ip   string // this one
	}{
		{host: "api.example.com", dns: "api.example.com"},
		{host: "API.Example.com.", dns: "api.example.com"},
		{host: "a.example.org", dns: "a.example.org"},
		{host: "x.y.z.example.org", dns: "x.y.z.example.org"},
		{host: "under_score.example.org", dns: "under_score.example.org"},
		{host: "10.1.2.3", ip: "10.1.2.3"},
		{host: "192.168.44.5", ip: "192.168.44.5"},
		{host: "::ffff:192.168.1.1", ip: "192.168.1.1"},
		{host: "2001:db8::7", ip: "2001:db8::7"},
		{host: "[2001:db8:ffff::1]", ip: "2001:db8:ffff::1"},
		{host: "fd00::1", ip: "fd00::1"},
	} {
		t.Run(tc.host, func(t *testing.T) {
			t.Parallel()
			start := time.Now().Truncate(time.Second)
			tc2, err := a.Leaf(tc.host)
			require.NoError(t, err)
			require.Len(t, tc2.Certificate, 1)
			c := tc2.Leaf
			require.NotNil(t, c)
			assert.Equal(t, tc2.Certificate[0], c.Raw)
			if tc.dns != "" {
				assert.Equal(t, []string{tc.dns}, c.DNSNames)
				assert.Empty(t, c.IPAddresses)
				require.NoError(t, verify(a, c, tc.dns))
			} else {
				require.Len(t, c.IPAddresses, 1)
				assert.True(t, c.IPAddresses[0].Equal(net.ParseIP(tc.ip)), "SAN %s", c.IPAddresses[0])
				assert.Empty(t, c.DNSNames)
				require.NoError(t, verify(a, c, tc.ip))
			}
			assert.Empty(t, c.EmailAddresses)
			assert.Empty(t, c.URIs)
			assert.Empty(t, c.Subject.CommonName)
			assert.False(t, c.IsCA)
			assert.Equal(t, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, c.ExtKeyUsage)
			assert.Equal(t, x509.KeyUsageDigitalSignature, c.KeyUsage)
			assert.LessOrEqual(t, c.NotAfter.Sub(c.NotBefore), 24*time.Hour)
			assert.False(t, c.NotBefore.After(start), "backdated for clock skew")
			assert.False(t, c.NotAfter.After(a.Certificate().NotAfter))
			assert.Positive(t, c.SerialNumber.Sign())
			require.NoError(t, c.CheckSignatureFrom(a.Certificate()))
			key, ok := tc2.PrivateKey.(*ecdsa.PrivateKey)
			require.True(t, ok)
			assert.True(t, key.PublicKey.Equal(c.PublicKey), "private key matches the certificate")
			assert.False(t, key.PublicKey.Equal(a.Certificate().PublicKey), "never the CA key")
		})
	}
}

func TestLeafRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		entries []string
		host    string
	}{
		{"apex of a wildcard", leafPatterns, "example.org"},
		{"subdomain of an exact name", leafPatterns, "sub.api.example.com"},
		{"suffix look-alike", leafPatterns, "evilexample.org"},
		{"unrelated host", leafPatterns, "evil.com"},
		{"address next to an IP entry", leafPatterns, "10.1.2.4"},
		{"address outside a CIDR", leafPatterns, "172.16.0.1"},
		{"IPv6 outside a CIDR", leafPatterns, "2001:db9::1"},
		{"mapped IPv4 next to an IP entry", leafPatterns, "::ffff:10.1.2.4"},
		{"IP without an IP pattern", []string{"api.example.com", "*.example.org"}, "10.0.0.1"},
		{"IPv6 without an IP pattern", []string{"api.example.com"}, "::1"},
		{"name without a name pattern", []string{"10.0.0.0/8"}, "api.example.com"},
		{"empty", leafPatterns, ""},
		{"non-canonical IP", []string{"10.0.0.0/8"}, "10.1"},
		{"host:port", leafPatterns, "api.example.com:443"},
		{"empty label", leafPatterns, "a..example.org"},
		{"wildcard as a host", leafPatterns, "*.example.org"},
		{"nothing permitted", nil, "api.example.com"},
		{"nothing permitted, IP", nil, "10.0.0.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := newCA(t, tc.entries...)
			c, err := a.Leaf(tc.host)
			require.ErrorIs(t, err, ErrNotPermitted)
			require.Nil(t, c)
			a.mu.Lock()
			defer a.mu.Unlock()
			assert.Empty(t, a.leaves)
			assert.Zero(t, a.mints, "refused before minting")
		})
	}
}

func TestLeafCache(t *testing.T) {
	t.Parallel()
	a := newCA(t, leafPatterns...)
	first, err := a.Leaf("api.example.com")
	require.NoError(t, err)
	for _, spelling := range []string{"api.example.com", "API.EXAMPLE.COM", "api.example.com."} {
		again, err := a.Leaf(spelling)
		require.NoError(t, err)
		assert.Same(t, first, again, spelling)
	}
	v6, err := a.Leaf("2001:db8::1")
	require.NoError(t, err)
	bracketed, err := a.Leaf("[2001:db8::1]")
	require.NoError(t, err)
	assert.Same(t, v6, bracketed)
	assert.NotSame(t, first, v6)
	assert.Equal(t, uint64(2), mints(a))
}

func mints(a *Authority) uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.mints
}

func TestLeafConcurrentFirstUseMintsOnce(t *testing.T) {
	t.Parallel()
	a := newCA(t, leafPatterns...)
	const n = 32
	var (
		wg    sync.WaitGroup
		start = make(chan struct{})
		certs = make([]any, n)
		errs  = make([]error, n)
	)
	for i := range n {
		wg.Go(func() {
			<-start
			c, err := a.Leaf("deep.a.example.org")
			certs[i], errs[i] = c, err
		})
	}
	close(start)
	wg.Wait()
	for i := range n {
		require.NoError(t, errs[i])
		assert.Same(t, certs[0], certs[i])
	}
	assert.Equal(t, uint64(1), mints(a))
}

func TestLeafRenewal(t *testing.T) {
	t.Parallel()
	a := newCA(t, leafPatterns...)
	caEnd := a.Certificate().NotAfter
	var mu sync.Mutex
	now := time.Now()
	a.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	at := func(t0 time.Time) { mu.Lock(); defer mu.Unlock(); now = t0 }

	first, err := a.Leaf("api.example.com")
	require.NoError(t, err)
	at(first.Leaf.NotAfter.Add(-renewBefore - time.Minute))
	same, err := a.Leaf("api.example.com")
	require.NoError(t, err)
	assert.Same(t, first, same, "not yet due")

	at(first.Leaf.NotAfter.Add(-renewBefore + time.Minute))
	renewed, err := a.Leaf("api.example.com")
	require.NoError(t, err)
	assert.NotSame(t, first, renewed)
	assert.True(t, renewed.Leaf.NotAfter.After(first.Leaf.NotAfter))
	assert.Equal(t, uint64(2), mints(a))

	// Near the CA's end a leaf is capped there and not renewed again.
	at(caEnd.Add(-2 * time.Hour))
	capped, err := a.Leaf("a.example.org")
	require.NoError(t, err)
	assert.Equal(t, caEnd, capped.Leaf.NotAfter)
	at(caEnd.Add(-time.Minute))
	again, err := a.Leaf("a.example.org")
	require.NoError(t, err)
	assert.Same(t, capped, again)

	at(caEnd)
	c, err := a.Leaf("a.example.org")
	require.ErrorIs(t, err, ErrExpired)
	require.Nil(t, c)
}

func TestLeafCacheBounded(t *testing.T) {
	t.Parallel()
	a := newCA(t, leafPatterns...)
	a.max = 4
	seen := map[any]bool{}
	var last string
	for i := range 10 {
		last = fmt.Sprintf("h%d.example.org", i)
		c, err := a.Leaf(last)
		require.NoError(t, err)
		require.NoError(t, verify(a, c.Leaf, last))
		seen[c] = true
		a.mu.Lock()
		size := len(a.leaves)
		a.mu.Unlock()
		require.LessOrEqual(t, size, 4)
	}
	assert.Len(t, seen, 10)
	newest, err := a.Leaf(last)
	require.NoError(t, err)
	assert.True(t, seen[newest], "the newest entry is never the one evicted")
	assert.Equal(t, uint64(10), mints(a))
}

func BenchmarkLeafCached(b *testing.B) {
	a := newCA(b, leafPatterns...)
	if _, err := a.Leaf("api.example.com"); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := a.Leaf("api.example.com"); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkLeafMint(b *testing.B) {
	a := newCA(b, leafPatterns...)
	i := 0
	for b.Loop() {
		i++
		if _, err := a.Leaf(fmt.Sprintf("h%d.example.org", i)); err != nil {
			b.Fatal(err)
		}
	}
}

// TestLeafVerifiesBeforeHandingOut: should the patterns Leaf checks ever be
// wider than the constraints in the CA, Leaf still refuses, because it runs
// every new leaf through Go's verifier first.
func TestLeafVerifiesBeforeHandingOut(t *testing.T) {
	t.Parallel()
	a := newCA(t, "api.example.com")
	a.permitted = append(a.permitted, patterns(t, "evil.com", "10.0.0.1")...)
	for _, host := range []string{"evil.com", "10.0.0.1"} {
		c, err := a.Leaf(host)
		require.ErrorIs(t, err, ErrNotPermitted, host)
		var invalid x509.CertificateInvalidError
		require.ErrorAs(t, err, &invalid)
		assert.Equal(t, x509.CANotAuthorizedForThisName, invalid.Reason)
		require.Nil(t, c)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	assert.Empty(t, a.leaves, "a refused leaf is not cached")
}
