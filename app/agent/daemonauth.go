package agent

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"math/big"
	"time"
)

// errNotDaemon: the peer on the daemon's socket did not prove that it holds
// the sandbox's token.
var errNotDaemon = errors.New("the peer does not hold the sandbox's token")

// tlsPair is the TLS configuration of both ends of a relay's connection to
// the daemon. Both hold one Ed25519 key derived from the sandbox's token
// and accept a peer only if its certificate carries that key: TLS 1.3
// makes each side sign the handshake with it, so a process that took the
// socket's name, or sits between relay and daemon, cannot finish a
// handshake, and everything after it is encrypted and authenticated. The
// token itself never crosses the socket after the daemon's first start.
type tlsPair struct{ client, server *tls.Config }

func newTLSPair(token string) (tlsPair, error) {
	m := hmac.New(sha256.New, []byte(token))
	_, _ = m.Write([]byte("sandgate-agent daemon identity"))
	key := ed25519.NewKeyFromSeed(m.Sum(nil))
	pub := key.Public().(ed25519.PublicKey)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Unix(0, 0),
		NotAfter: time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, pub, key)
	if err != nil {
		return tlsPair{}, err
	}
	certs := []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}
	verify := func(raw [][]byte, _ [][]*x509.Certificate) error {
		if len(raw) == 0 {
			return errNotDaemon
		}
		c, err := x509.ParseCertificate(raw[0])
		if err != nil {
			return errNotDaemon
		}
		if k, ok := c.PublicKey.(ed25519.PublicKey); !ok || !k.Equal(pub) {
			return errNotDaemon
		}
		return nil
	}
	return tlsPair{
		// The pinned key is the whole check: there is no CA and no name.
		client: &tls.Config{MinVersion: tls.VersionTLS13, Certificates: certs, ServerName: "sandgate-agent",
			InsecureSkipVerify: true, VerifyPeerCertificate: verify}, //nolint:gosec // verify pins the key
		server: &tls.Config{MinVersion: tls.VersionTLS13, Certificates: certs,
			ClientAuth: tls.RequireAnyClientCert, VerifyPeerCertificate: verify},
	}, nil
}
