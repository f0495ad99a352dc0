// Package ca is the egress gate's per-session interception certificate
// authority (CONTRACT B-1). The gate terminates TLS only for admitted hosts
// that carry bound credentials; it does so with leaves issued by a CA minted
// in the gate's memory whose X.509 name constraints permit only those hosts,
// so the CA certificate that reaches the sandbox's trust store cannot vouch
// for any other name even if the gate were tricked into signing one. The CA
// key never leaves the Authority: nothing here exports or serialises it.
package ca

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"sync"
	"time"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/egress"
)

// Validity is how long a CA stays valid after New. It bounds how long a CA
// certificate copied out of a sandbox means anything. A gate that runs
// longer gets ErrExpired from Leaf and must be re-created with a new CA
// (and the sandbox's trust bundle with it); sessions reaped after their idle
// TTL rarely live that long.
const Validity = 7 * 24 * time.Hour

// clockSkew backdates NotBefore so a sandbox whose clock runs behind the
// gate's still accepts a fresh certificate.
const clockSkew = time.Hour

var (
	// ErrNotPermitted: the host is outside the CA's name constraints (or
	// not a valid host at all); Leaf never mints a certificate for it.
	ErrNotPermitted = errors.New("host not permitted by the session CA")
	// ErrExpired: the CA's validity has ended; the gate needs a new CA.
	ErrExpired = errors.New("session CA expired")
)

// Authority is one gate's CA: its certificate, its key (held only here) and
// a cache of the leaves it minted. It is safe for concurrent use.
type Authority struct {
	cert      *x509.Certificate
	certPEM   []byte
	pool      *x509.CertPool // only cert: the roots mint verifies each leaf against
	key       *ecdsa.PrivateKey
	leafKey   *ecdsa.PrivateKey // one key for every leaf: see leaf.go
	permitted []egress.Pattern
	now       func() time.Time // time.Now; replaced by tests

	mu     sync.Mutex
	leaves map[string]*leafEntry
	max    int    // cache bound
	mints  uint64 // leaves minted, under mu; tests read it
}

// New mints a CA for the hosts of the given allowed_hosts patterns (the union
// over all credentials of the config in force when the gate first becomes
// ready). sessionID goes into the subject CN ("sandgate session <id>"); it
// is valid by construction (domain.ID) and set (proxy.New refuses the zero
// id). An empty pattern list yields a CA under which no name and no address
// verifies.
func New(sessionID domain.ID, permitted []egress.Pattern) (*Authority, error) {
	nc, err := constraintsFor(permitted)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("ca: CA key: %w", err)
	}
	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("ca: leaf key: %w", err)
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{Organization: []string{"sandgate"}, CommonName: "sandgate session " + sessionID.String()},
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              now.Add(Validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLen:            0,
		MaxPathLenZero:        true, // leaves only: no intermediate under this CA
	}
	nc.apply(tmpl)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("ca: create CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("ca: parse CA certificate: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &Authority{
		cert:      cert,
		pool:      pool,
		certPEM:   pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		key:       key,
		leafKey:   leafKey,
		permitted: slices.Clone(permitted),
		now:       time.Now,
		leaves:    make(map[string]*leafEntry),
		max:       maxLeaves,
	}, nil
}

// CertPEM returns the CA certificate, PEM-encoded: what the sandbox appends
// to its trust bundle. The slice is the caller's.
func (a *Authority) CertPEM() []byte { return slices.Clone(a.certPEM) }

// Certificate returns the parsed CA certificate, for tests and cert pools.
// It is shared: the caller must not modify it.
func (a *Authority) Certificate() *x509.Certificate { return a.cert }

// randomSerial returns a uniformly random positive serial of at most 128
// bits (RFC 5280 allows up to 20 octets).
func randomSerial() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("ca: serial: %w", err)
	}
	if n.Sign() == 0 {
		n.SetInt64(1) // a zero serial is not positive; 2^-128 odds
	}
	return n, nil
}
