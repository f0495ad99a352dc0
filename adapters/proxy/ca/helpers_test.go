package ca

import (
	"crypto/rand"
	"crypto/x509"
	"math/big"
	"net"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/egress"
)

const testSession = "ses_0123456789abcdefghjkmnpq"

var testSID = domain.MustParseSessionID(testSession)

// patterns parses allowed_hosts entries.
func patterns(t testing.TB, entries ...string) []egress.Pattern {
	t.Helper()
	ps := make([]egress.Pattern, 0, len(entries))
	for _, e := range entries {
		p, err := egress.ParsePattern(e)
		require.NoError(t, err, e)
		ps = append(ps, p)
	}
	return ps
}

// newCA mints an Authority for entries.
func newCA(t testing.TB, entries ...string) *Authority {
	t.Helper()
	a, err := New(testSID, patterns(t, entries...))
	require.NoError(t, err)
	return a
}

// verify checks cert against a pool holding only the CA, for host.
func verify(a *Authority, cert *x509.Certificate, host string) error {
	pool := x509.NewCertPool()
	pool.AddCert(a.Certificate())
	_, err := cert.Verify(x509.VerifyOptions{
		DNSName:   host,
		Roots:     pool,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	return err
}

// sans is what a forged leaf claims.
type sans struct {
	dns    []string
	ips    []string
	emails []string
	uris   []string
}

// forge signs a leaf with the CA's own key, bypassing Leaf's checks: what a
// gate tricked into signing anything could produce. Only the name
// constraints stand between such a leaf and a verifier.
func forge(t testing.TB, a *Authority, s sans) *x509.Certificate {
	t.Helper()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(t),
		NotBefore:             time.Now().Add(-time.Minute),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		DNSNames:              s.dns,
		EmailAddresses:        s.emails,
	}
	for _, ip := range s.ips {
		parsed := net.ParseIP(ip)
		require.NotNil(t, parsed, ip)
		tmpl.IPAddresses = append(tmpl.IPAddresses, parsed)
	}
	for _, u := range s.uris {
		parsed, err := url.Parse(u)
		require.NoError(t, err)
		tmpl.URIs = append(tmpl.URIs, parsed)
	}
	return sign(t, a, tmpl, a.Certificate())
}

// sign creates tmpl under parent with the CA's key, using the leaf key as
// the subject key.
func sign(t testing.TB, a *Authority, tmpl, parent *x509.Certificate) *x509.Certificate {
	t.Helper()
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &a.leafKey.PublicKey, a.key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return cert
}

func serial(t testing.TB) *big.Int {
	t.Helper()
	n, err := randomSerial()
	require.NoError(t, err)
	return n
}
