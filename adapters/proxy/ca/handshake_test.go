package ca

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// serveTLS accepts loopback TLS connections, picking the certificate by SNI
// (or, without SNI, by the address dialled, as the proxy would by the CONNECT
// authority) with pick. It returns the listener's address and the errors
// pick returned, by host.
func serveTLS(t *testing.T, pick func(host string) (*tls.Certificate, error)) (string, *sync.Map) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	refused := &sync.Map{}
	cfg := &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
			host := hello.ServerName
			if host == "" {
				ap, err := netip.ParseAddrPort(hello.Conn.LocalAddr().String())
				if err != nil {
					return nil, err
				}
				host = ap.Addr().String()
			}
			c, err := pick(host)
			if err != nil {
				refused.Store(host, err)
			}
			return c, err
		},
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer func() { _ = c.Close() }()
				_ = c.SetDeadline(time.Now().Add(10 * time.Second))
				_ = tls.Server(c, cfg).Handshake()
			}()
		}
	}()
	return ln.Addr().String(), refused
}

func dialTLS(t *testing.T, addr, serverName string, roots *x509.CertPool) (tls.ConnectionState, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	d := tls.Dialer{Config: &tls.Config{ServerName: serverName, RootCAs: roots, MinVersion: tls.VersionTLS12}}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return tls.ConnectionState{}, err
	}
	defer func() { _ = c.Close() }()
	tc, ok := c.(*tls.Conn)
	require.True(t, ok)
	return tc.ConnectionState(), nil
}

func TestHandshake(t *testing.T) {
	t.Parallel()
	a := newCA(t, "api.example.com", "*.example.org", "127.0.0.1")
	roots := x509.NewCertPool()
	roots.AddCert(a.Certificate())
	viaLeaf, refused := serveTLS(t, a.Leaf)
	// forged serves a leaf the CA key signed for whatever the client asks:
	// the client's verifier must still refuse names outside the constraints.
	forged, _ := serveTLS(t, func(host string) (*tls.Certificate, error) {
		c := forge(t, a, sans{dns: []string{host}})
		return &tls.Certificate{Certificate: [][]byte{c.Raw}, PrivateKey: a.leafKey, Leaf: c}, nil
	})

	for _, tc := range []struct {
		name   string
		addr   string
		sni    string
		reason x509.InvalidReason // want a verification failure, or
		remote bool               // the server refusing in the handshake
	}{
		{name: "permitted name", addr: viaLeaf, sni: "api.example.com"},
		{name: "permitted wildcard subdomain", addr: viaLeaf, sni: "x.y.example.org"},
		{name: "permitted IP, no SNI", addr: viaLeaf, sni: "127.0.0.1"},
		{name: "forbidden name", addr: viaLeaf, sni: "evil.com", remote: true},
		{name: "apex of a wildcard", addr: viaLeaf, sni: "example.org", remote: true},
		{name: "forged permitted name", addr: forged, sni: "a.example.org"},
		{name: "forged forbidden name", addr: forged, sni: "evil.com", reason: x509.CANotAuthorizedForThisName},
		{name: "forged apex of a wildcard", addr: forged, sni: "example.org", reason: x509.CANotAuthorizedForThisName},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			state, err := dialTLS(t, tc.addr, tc.sni, roots)
			switch {
			case tc.remote:
				// GetCertificate's error becomes an internal_error alert.
				require.ErrorContains(t, err, "remote error: tls: internal error")
				serverErr, ok := refused.Load(tc.sni)
				require.True(t, ok)
				require.ErrorIs(t, serverErr.(error), ErrNotPermitted)
			case tc.reason != 0:
				var invalid x509.CertificateInvalidError
				require.ErrorAs(t, err, &invalid, "%v", err)
				assert.Equal(t, tc.reason, invalid.Reason)
				var verr *tls.CertificateVerificationError
				require.ErrorAs(t, err, &verr)
			default:
				require.NoError(t, err)
				require.Len(t, state.VerifiedChains, 1)
				chain := state.VerifiedChains[0]
				require.Len(t, chain, 2)
				assert.True(t, chain[1].Equal(a.Certificate()))
				assert.NoError(t, chain[0].VerifyHostname(tc.sni))
			}
		})
	}
}
