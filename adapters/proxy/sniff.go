package proxy

import (
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"time"

	"github.com/sandgate/sandgate/core/egress"
)

// recordTypeHandshake starts every TLS ClientHello record.
const recordTypeHandshake = 0x16

// maxHelloBytes bounds what the proxy reads to find a ClientHello's SNI:
// a hello with post-quantum key shares is a few KiB, far below this.
const maxHelloBytes = 64 << 10

// checkAndCopy copies the client's bytes (pre, then the connection) to up.
// When the first byte starts a TLS handshake record, the ClientHello is read
// first (within HeaderTimeout) and its SNI, if any, must name t's host:
// otherwise it returns the rule of the refusal and nothing reached up.
// Non-TLS bytes pass as they are: the tunnel is opaque by design, and the
// authority was decided and dialled by the gate either way. Whatever was
// read to decide goes up in one write; the rest is copied connection to
// connection (copyConn), with no reader in between.
func (p *Proxy) checkAndCopy(up net.Conn, pre *bytes.Reader, client net.Conn, t egress.Target) (int64, string, error) {
	src := io.MultiReader(pre, client)
	first := make([]byte, 1)
	if _, err := io.ReadFull(src, first); err != nil {
		return 0, "", nil // the client closed before sending: a clean end
	}
	prefix := first
	if first[0] == recordTypeHandshake {
		_ = client.SetReadDeadline(time.Now().Add(p.opts.HeaderTimeout))
		name, read, err := readSNI(io.MultiReader(bytes.NewReader(first), src))
		_ = client.SetReadDeadline(time.Time{})
		if err != nil {
			return 0, ruleBadHello, nil
		}
		if name != "" && !sameHost(name, t.Host) {
			return 0, ruleSNIMismatch, nil
		}
		prefix = read
	}
	// src reads pre to its end before the connection, so what pre still
	// holds comes right after prefix and before any byte of the connection.
	rest := make([]byte, pre.Len())
	_, _ = io.ReadFull(pre, rest)
	prefix = append(prefix, rest...)
	if _, err := up.Write(prefix); err != nil {
		return 0, "", err
	}
	n, err := copyConn(up, client)
	return n + int64(len(prefix)), "", err
}

// sameHost reports whether an SNI names h (canonical comparison, so case
// and a trailing dot do not matter).
func sameHost(sni string, h egress.Host) bool {
	got, err := egress.ParseHost(sni)
	return err == nil && got == h
}

var errSniffed = errors.New("client hello read")

// readSNI reads one ClientHello from r with crypto/tls's own parser (no
// hand-written TLS parsing) and returns its server name and every byte it
// consumed, to be replayed upstream. It fails when r does not hold a
// well-formed ClientHello.
func readSNI(r io.Reader) (string, []byte, error) {
	var read bytes.Buffer
	var name string
	seen := false
	conn := helloConn{r: io.TeeReader(io.LimitReader(r, maxHelloBytes), &read)}
	cfg := &tls.Config{GetConfigForClient: func(hi *tls.ClientHelloInfo) (*tls.Config, error) {
		name, seen = hi.ServerName, true
		return nil, errSniffed
	}}
	_ = tls.Server(conn, cfg).Handshake()
	if !seen {
		return "", nil, errors.New("no client hello")
	}
	return name, read.Bytes(), nil
}

// helloConn is the read side of a client for readSNI; what the TLS server
// would write (its alert) goes nowhere.
type helloConn struct{ r io.Reader }

func (c helloConn) Read(b []byte) (int, error)       { return c.r.Read(b) }
func (c helloConn) Write(b []byte) (int, error)      { return len(b), nil }
func (c helloConn) Close() error                     { return nil }
func (c helloConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c helloConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (c helloConn) SetDeadline(time.Time) error      { return nil }
func (c helloConn) SetReadDeadline(time.Time) error  { return nil }
func (c helloConn) SetWriteDeadline(time.Time) error { return nil }
