package ca

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestForgedLeaf proves the name constraints themselves: leaves signed with
// the CA's key, past every check Leaf makes, still fail Go's verification
// unless all their names are permitted.
func TestForgedLeaf(t *testing.T) {
	t.Parallel()
	mixed := []string{"api.example.com", "*.example.org", "10.0.0.0/8", "2001:db8::/32"}
	names := []string{"api.example.com", "*.example.org"}
	for _, tc := range []struct {
		name    string
		entries []string
		sans    sans
		host    string
		ok      bool
	}{
		{"control: wildcard subdomain", mixed, sans{dns: []string{"a.b.example.org"}}, "a.b.example.org", true},
		{"control: IP in CIDR", mixed, sans{ips: []string{"10.9.8.7"}}, "10.9.8.7", true},
		// X.509 lets an exact-name constraint cover subdomains: Leaf refuses
		// them itself (TestLeafRefuses), the verifier would not.
		{"subdomain of an exact name passes X.509", mixed, sans{dns: []string{"x.api.example.com"}}, "x.api.example.com", true},
		{"apex of a wildcard", mixed, sans{dns: []string{"example.org"}}, "example.org", false},
		{"unrelated name", mixed, sans{dns: []string{"evil.com"}}, "evil.com", false},
		{"suffix look-alike", mixed, sans{dns: []string{"evilexample.org"}}, "evilexample.org", false},
		{"parent of an exact name", mixed, sans{dns: []string{"example.com"}}, "example.com", false},
		{"unrelated name beside a permitted one", mixed, sans{dns: []string{"a.example.org", "evil.com"}}, "a.example.org", false},
		{"IPv4 outside CIDR", mixed, sans{ips: []string{"11.0.0.1"}}, "11.0.0.1", false},
		{"IPv6 outside CIDR", mixed, sans{ips: []string{"2001:db9::1"}}, "2001:db9::1", false},
		{"email beside a permitted name", mixed, sans{dns: []string{"a.example.org"}, emails: []string{"x@evil.com"}}, "a.example.org", false},
		{"email at a permitted host", mixed, sans{dns: []string{"a.example.org"}, emails: []string{"x@api.example.com"}}, "a.example.org", false},
		{"URI beside a permitted name", mixed, sans{dns: []string{"a.example.org"}, uris: []string{"https://evil.com/"}}, "a.example.org", false},
		{"URI at a permitted host", mixed, sans{dns: []string{"a.example.org"}, uris: []string{"https://api.example.com/"}}, "a.example.org", false},
		{"IPv4 without an IP pattern", names, sans{ips: []string{"10.0.0.1"}}, "10.0.0.1", false},
		{"IPv6 without an IP pattern", names, sans{ips: []string{"::1"}}, "::1", false},
		{"IP beside a permitted name", names, sans{dns: []string{"a.example.org"}, ips: []string{"127.0.0.1"}}, "a.example.org", false},
		{"name without a name pattern", []string{"10.0.0.0/8"}, sans{dns: []string{"api.example.com"}}, "api.example.com", false},
		{"IPv4 only permits IPv4", []string{"10.0.0.0/8"}, sans{ips: []string{"::1"}}, "::1", false},
		{"IPv6 only permits IPv6", []string{"2001:db8::/32"}, sans{ips: []string{"10.0.0.1"}}, "10.0.0.1", false},
		{"nothing permitted: a name", nil, sans{dns: []string{"example.com"}}, "example.com", false},
		{"nothing permitted: a TLD", nil, sans{dns: []string{"com"}}, "com", false},
		{"nothing permitted: IPv4", nil, sans{ips: []string{"10.0.0.1"}}, "10.0.0.1", false},
		{"nothing permitted: IPv6", nil, sans{ips: []string{"2001:db8::1"}}, "2001:db8::1", false},
		{"nothing permitted: email", nil, sans{emails: []string{"x@example.com"}}, "", false},
		{"nothing permitted: URI", nil, sans{uris: []string{"https://example.com/"}}, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := newCA(t, tc.entries...)
			err := verify(a, forge(t, a, tc.sans), tc.host)
			if tc.ok {
				require.NoError(t, err)
				return
			}
			var invalid x509.CertificateInvalidError
			require.ErrorAs(t, err, &invalid)
			assert.Equal(t, x509.CANotAuthorizedForThisName, invalid.Reason, "%v", err)
		})
	}
}

// TestForgedIntermediate: MaxPathLenZero forbids a sub-CA, which would carry
// no name constraints of its own.
func TestForgedIntermediate(t *testing.T) {
	t.Parallel()
	a := newCA(t, "api.example.com")
	inter := sign(t, a, &x509.Certificate{
		SerialNumber:          serial(t),
		Subject:               pkix.Name{CommonName: "sub-CA"},
		NotBefore:             time.Now().Add(-time.Minute),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}, a.Certificate())
	// The intermediate's key is the leaf key (sign's subject key); sign the
	// leaf with it by building a throwaway Authority view.
	sub := &Authority{key: a.leafKey, leafKey: a.leafKey}
	leaf := sign(t, sub, &x509.Certificate{
		SerialNumber: serial(t),
		NotBefore:    time.Now().Add(-time.Minute),
		NotAfter:     time.Now().Add(time.Hour),
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"api.example.com"},
	}, inter)

	roots := x509.NewCertPool()
	roots.AddCert(a.Certificate())
	inters := x509.NewCertPool()
	inters.AddCert(inter)
	_, err := leaf.Verify(x509.VerifyOptions{DNSName: "api.example.com", Roots: roots, Intermediates: inters})
	var invalid x509.CertificateInvalidError
	require.ErrorAs(t, err, &invalid)
	assert.Equal(t, x509.TooManyIntermediates, invalid.Reason, "%v", err)
}
