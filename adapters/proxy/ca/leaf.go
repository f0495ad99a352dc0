package ca

import (
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"time"

	"github.com/sandgate/sandgate/core/egress"
)

const (
	// maxLeaves bounds the leaf cache: a sandbox may name many hosts under
	// a wildcard, and each entry holds a certificate.
	maxLeaves = 4096
	// leafValidity is a leaf's whole span, backdating included, so a leaf
	// lives at most a day; it is also capped at the CA's NotAfter.
	leafValidity = 24 * time.Hour
	// renewBefore is how close to its NotAfter a cached leaf is replaced.
	renewBefore = time.Hour
)

// leafEntry is one cached leaf. ready is closed once cert/err/notAfter are
// set; until then other callers for the same host wait on it instead of
// minting again.
type leafEntry struct {
	ready    chan struct{}
	cert     *tls.Certificate
	notAfter time.Time
	err      error
}

// Leaf returns a TLS certificate for host (a name as egress.ParseHost
// canonicalises it, or an IP literal), minted on first use and cached. A host
// no pattern covers gets ErrNotPermitted: Leaf checks the patterns itself
// (X.509 lets an exact-name constraint cover subdomains too, so the
// constraints alone would be wider) and then verifies every new leaf against
// the CA, so it never hands out what a verifier would reject. After the CA's
// validity it returns ErrExpired.
//
// Every leaf shares one P-256 key generated with the Authority: the key
// never leaves the gate, so a per-host key would add minting cost and no
// isolation. The certificate returned is shared and must not be modified.
func (a *Authority) Leaf(host string) (*tls.Certificate, error) {
	h, err := egress.ParseHost(host)
	if err != nil {
		return nil, fmt.Errorf("ca: leaf for %.64q: %w: %w", host, ErrNotPermitted, err)
	}
	if !a.covers(h) {
		return nil, fmt.Errorf("ca: leaf for %.64q: %w", h.String(), ErrNotPermitted)
	}
	now := a.now()
	if !now.Before(a.cert.NotAfter) {
		return nil, fmt.Errorf("ca: leaf for %.64q: %w at %s", h.String(), ErrExpired, a.cert.NotAfter.UTC().Format(time.RFC3339))
	}
	e, owner := a.entry(h.String(), now)
	if owner {
		a.fill(e, h, now)
	}
	<-e.ready
	return e.cert, e.err
}

// covers reports whether a pattern admits h.
func (a *Authority) covers(h egress.Host) bool {
	for _, p := range a.permitted {
		if p.MatchHost(h) {
			return true
		}
	}
	return false
}

// entry returns the cache entry for key, and whether the caller must fill it
// (it was missing or due for renewal and the caller installed a new one).
func (a *Authority) entry(key string, now time.Time) (*leafEntry, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if e, ok := a.leaves[key]; ok && !a.stale(e, now) {
		return e, false
	}
	if _, ok := a.leaves[key]; !ok && len(a.leaves) >= a.max {
		a.evictLocked()
	}
	e := &leafEntry{ready: make(chan struct{})}
	a.leaves[key] = e
	a.mints++
	return e, true
}

// stale reports whether a finished entry is near its NotAfter while a new
// leaf could last longer (one capped at the CA's NotAfter cannot). An entry
// still being minted is never stale.
func (a *Authority) stale(e *leafEntry, now time.Time) bool {
	select {
	case <-e.ready:
	default:
		return false
	}
	return e.notAfter.Before(a.cert.NotAfter) && now.Add(renewBefore).After(e.notAfter)
}

// evictLocked drops one entry to make room. Go randomises where map
// iteration starts, so this is random eviction: cheap, and a sandbox cannot
// aim it. Waiters on a dropped entry still hold it and get their result.
func (a *Authority) evictLocked() {
	for k := range a.leaves {
		delete(a.leaves, k)
		return
	}
}

// fill mints the leaf for e and wakes its waiters; a failed entry leaves the
// cache so it is not served again.
func (a *Authority) fill(e *leafEntry, h egress.Host, now time.Time) {
	defer close(e.ready)
	e.cert, e.notAfter, e.err = a.mint(h, now)
	if e.err == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.leaves[h.String()] == e {
		delete(a.leaves, h.String())
	}
}

// mint issues a leaf whose only SAN is h and checks it against the CA with
// Go's verifier before anyone sees it.
func (a *Authority) mint(h egress.Host, now time.Time) (*tls.Certificate, time.Time, error) {
	serial, err := randomSerial()
	if err != nil {
		return nil, time.Time{}, err
	}
	notBefore := later(now.Add(-clockSkew), a.cert.NotBefore)
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		NotBefore:             notBefore,
		NotAfter:              earlier(notBefore.Add(leafValidity), a.cert.NotAfter),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	// No subject CN: some verifiers check a CN that looks like a host name
	// against the constraints, and the SAN alone names the host.
	if h.IsIP() {
		tmpl.IPAddresses = append(tmpl.IPAddresses, h.Addr.AsSlice())
	} else {
		tmpl.DNSNames = []string{h.Name}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &a.leafKey.PublicKey, a.key)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("ca: create leaf for %q: %w", h.String(), err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("ca: parse leaf for %q: %w", h.String(), err)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{
		DNSName:     h.String(),
		Roots:       a.pool,
		CurrentTime: now,
		KeyUsages:   []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}); err != nil {
		return nil, time.Time{}, fmt.Errorf("ca: leaf for %q: %w: %w", h.String(), ErrNotPermitted, err)
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: a.leafKey, Leaf: leaf}, leaf.NotAfter, nil
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
