package ca

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/x509"
	"encoding/asn1"
	"encoding/pem"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/egress"
)

var oidNameConstraints = asn1.ObjectIdentifier{2, 5, 29, 30}

func TestNewCAFields(t *testing.T) {
	t.Parallel()
	before := time.Now().Truncate(time.Second)
	a := newCA(t, "api.example.com", "*.example.org")
	after := time.Now()
	c := a.Certificate()

	assert.True(t, c.IsCA)
	assert.True(t, c.BasicConstraintsValid)
	assert.Equal(t, 0, c.MaxPathLen)
	assert.True(t, c.MaxPathLenZero)
	assert.Equal(t, x509.KeyUsageCertSign|x509.KeyUsageCRLSign, c.KeyUsage)
	assert.Empty(t, c.ExtKeyUsage)
	assert.Equal(t, x509.ECDSA, c.PublicKeyAlgorithm)
	assert.Equal(t, x509.ECDSAWithSHA256, c.SignatureAlgorithm)
	pub, ok := c.PublicKey.(*ecdsa.PublicKey)
	require.True(t, ok)
	assert.Equal(t, elliptic.P256(), pub.Curve)
	require.NoError(t, c.CheckSignatureFrom(c), "self-signed")
	assert.Equal(t, c.Subject.String(), c.Issuer.String())
	assert.Equal(t, "sandgate session "+testSession, c.Subject.CommonName)

	assert.Positive(t, c.SerialNumber.Sign())
	assert.LessOrEqual(t, c.SerialNumber.BitLen(), 128)
	assert.NotEqual(t, c.SerialNumber, newCA(t, "api.example.com").Certificate().SerialNumber)

	assert.False(t, c.NotBefore.Before(before.Add(-clockSkew-time.Second)))
	assert.False(t, c.NotBefore.After(after.Add(-clockSkew)))
	assert.False(t, c.NotAfter.Before(before.Add(Validity-time.Second)))
	assert.False(t, c.NotAfter.After(after.Add(Validity)))

	critical := false
	for _, ext := range c.Extensions {
		if ext.Id.Equal(oidNameConstraints) {
			critical = ext.Critical
		}
	}
	assert.True(t, critical, "name constraints must be critical")
	assert.True(t, c.PermittedDNSDomainsCritical)

	block, rest := pem.Decode(a.CertPEM())
	require.NotNil(t, block)
	assert.Empty(t, rest)
	assert.Equal(t, "CERTIFICATE", block.Type)
	assert.Equal(t, c.Raw, block.Bytes)
	a.CertPEM()[0] = 'X'
	assert.Equal(t, byte('-'), a.CertPEM()[0], "CertPEM returns a copy")
}

func TestNewConstraints(t *testing.T) {
	t.Parallel()
	noIPs := []string{"0.0.0.0/0", "::/0"}
	for _, tc := range []struct {
		name     string
		entries  []string
		dns      []string
		ips      []string
		excluded []string
	}{
		{"names", []string{"api.example.com", "*.example.org", "API.Example.NET."}, []string{"api.example.com", ".example.org", "api.example.net"}, nil, noIPs},
		{"addresses", []string{"10.0.0.0/8", "2001:db8::1", "192.0.2.7"}, []string{"invalid"}, []string{"10.0.0.0/8", "2001:db8::1/128", "192.0.2.7/32"}, nil},
		{"mixed", []string{"*.example.org", "fd00::/8"}, []string{".example.org"}, []string{"fd00::/8"}, nil},
		{"none", nil, []string{"invalid"}, nil, noIPs},
		{"ipv4-mapped range", []string{"::ffff:10.0.0.0/104"}, []string{"invalid"}, []string{"::ffff:10.0.0.0/104", "10.0.0.0/8"}, nil},
		{"ipv4-mapped address", []string{"::ffff:10.0.0.1"}, []string{"invalid"}, []string{"::ffff:10.0.0.1/128", "10.0.0.1/32"}, nil},
		{"ipv6 covering mapped block", []string{"::/0"}, []string{"invalid"}, []string{"::/0", "0.0.0.0/0"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newCA(t, tc.entries...).Certificate()
			assert.Equal(t, tc.dns, c.PermittedDNSDomains)
			assert.Empty(t, c.ExcludedDNSDomains)
			assert.Equal(t, tc.ips, cidrs(c.PermittedIPRanges))
			assert.Equal(t, tc.excluded, cidrs(c.ExcludedIPRanges))
			assert.Equal(t, []string{"invalid"}, c.PermittedEmailAddresses)
			assert.Equal(t, []string{"invalid"}, c.PermittedURIDomains)
			assert.Empty(t, c.ExcludedEmailAddresses)
			assert.Empty(t, c.ExcludedURIDomains)
		})
	}
}

// cidrs renders ranges as encoded: net.IPNet.String would show an
// IPv4-mapped range in IPv4 form, hiding the 16-byte encoding.
func cidrs(ns []*net.IPNet) []string {
	var out []string
	for _, n := range ns {
		addr, ok := netip.AddrFromSlice(n.IP)
		ones, bits := n.Mask.Size()
		if !ok || bits != addr.BitLen() {
			out = append(out, "malformed "+n.String())
			continue
		}
		out = append(out, netip.PrefixFrom(addr, ones).String())
	}
	return out
}

func TestNewErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		session domain.ID
		pats    []egress.Pattern
		is      error
		msg     string
	}{
		// A bad session id is unrepresentable (domain.ID) and the zero one
		// is proxy.New's to refuse: New's rows are about its patterns.
		{"zero pattern", testSID, []egress.Pattern{{}}, egress.ErrInvalidPattern, "permitted[0]"},
		{"zero pattern after a good one", testSID, append(patterns(t, "api.example.com"), egress.Pattern{}), egress.ErrInvalidPattern, "permitted[1]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a, err := New(tc.session, tc.pats)
			require.ErrorIs(t, err, tc.is)
			require.ErrorContains(t, err, tc.msg)
			require.Nil(t, a)
		})
	}
}

func BenchmarkNew(b *testing.B) {
	pats := patterns(b, "api.example.com", "*.example.org", "10.0.0.0/8")
	for b.Loop() {
		if _, err := New(testSID, pats); err != nil {
			b.Fatal(err)
		}
	}
}
