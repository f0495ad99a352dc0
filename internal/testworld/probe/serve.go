package main

import (
	"crypto/sha1" //nolint:gosec // RFC 6455 names SHA-1 for the handshake
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"sync"
	"time"
)

// Record is one line of the origin's log (JSON on stdout): what a request
// looked like when it reached the origin. The test package decodes the
// same shape.
type Record struct {
	Kind    string              `json:"kind"` // http, https, tcp, udp, dns-udp, dns-tcp
	Method  string              `json:"method,omitempty"`
	URL     string              `json:"url,omitempty"`
	Host    string              `json:"host,omitempty"`
	SNI     string              `json:"sni,omitempty"`
	Headers map[string][]string `json:"headers,omitempty"`
	Body    string              `json:"body,omitempty"`
	BodyLen int64               `json:"body_len,omitempty"`
	Name    string              `json:"name,omitempty"`
	Remote  string              `json:"remote,omitempty"`
}

// maxLoggedBody bounds the body kept in a record (its full length is kept
// in BodyLen).
const maxLoggedBody = 4 << 10

// maxBody bounds what the origin reads of one body.
const maxBody = 64 << 20

// logger writes records as JSON lines, one writer at a time.
type logger struct {
	mu  sync.Mutex
	enc *json.Encoder
}

func (l *logger) log(r Record) {
	l.mu.Lock()
	defer l.mu.Unlock()
	_ = l.enc.Encode(r)
}

// runServe runs the origin until killed: HTTP on :80, HTTPS on :443 (a leaf
// for --name and every address of this host, issued by the CA in --ca-cert
// and --ca-key), TCP and UDP echo on :7, DNS on :53 (UDP and TCP, every
// query answered with this host's first IPv4 address).
func runServe(args []string) (bool, error) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	caCert := fs.String("ca-cert", "", "issuing CA certificate (PEM)")
	caKey := fs.String("ca-key", "", "issuing CA key (PKCS#8 PEM)")
	name := fs.String("name", "", "DNS name of the HTTPS certificate")
	if err := fs.Parse(args); err != nil {
		return false, err
	}
	addrs, err := ownAddrs()
	if err != nil {
		return false, err
	}
	leaf, err := mintLeaf(*caCert, *caKey, *name, addrs)
	if err != nil {
		return false, err
	}
	l := &logger{enc: json.NewEncoder(os.Stdout)}
	errc := make(chan error, 6)
	go func() { errc <- serveHTTP(l, ":80", nil) }()
	go func() { errc <- serveHTTP(l, ":443", leaf) }()
	go func() { errc <- serveTCPEcho(l, ":7") }()
	go func() { errc <- serveUDPEcho(l, ":7") }()
	go func() { errc <- serveDNSUDP(l, ":53", firstV4(addrs)) }()
	go func() { errc <- serveDNSTCP(l, ":53", firstV4(addrs)) }()
	fmt.Fprintln(os.Stderr, "origin: serving")
	return false, <-errc
}

func ownAddrs() ([]netip.Addr, error) {
	ifaddrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	var out []netip.Addr
	for _, a := range ifaddrs {
		p, err := netip.ParsePrefix(a.String())
		if err == nil && !p.Addr().IsLoopback() && !p.Addr().IsLinkLocalUnicast() {
			out = append(out, p.Addr())
		}
	}
	return out, nil
}

func firstV4(addrs []netip.Addr) netip.Addr {
	for _, a := range addrs {
		if a.Is4() {
			return a
		}
	}
	return netip.IPv4Unspecified()
}

// route serves /sse/ (three events 1.5 s apart, flushed one by one) and
// WebSocket upgrades (a raw echo after the 101); everything else is echo.
func route(l *logger, kind string) http.HandlerFunc {
	plain := echo(l, kind)
	return func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, "/sse/"):
			l.log(Record{Kind: kind, Method: r.Method, URL: r.RequestURI, Host: r.Host, Remote: r.RemoteAddr})
			sse(w)
		case strings.EqualFold(r.Header.Get("Upgrade"), "websocket"):
			l.log(Record{Kind: kind, Method: r.Method, URL: r.RequestURI, Host: r.Host, Headers: r.Header, Remote: r.RemoteAddr})
			upgradeEcho(w, r)
		default:
			plain(w, r)
		}
	}
}

// sseGap separates the events: long enough that a buffering gate is seen.
const sseGap = 1500 * time.Millisecond

func sse(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	rc := http.NewResponseController(w)
	for i := 1; i <= 3; i++ {
		if i > 1 {
			time.Sleep(sseGap)
		}
		if _, err := fmt.Fprintf(w, "data: %d\n\n", i); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
	}
}

// upgradeEcho answers a WebSocket handshake (RFC 6455 §4.2.2) and then
// echoes raw bytes until the client closes.
func upgradeEcho(w http.ResponseWriter, r *http.Request) {
	sum := sha1.Sum([]byte(r.Header.Get("Sec-WebSocket-Key") + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	defer func() { _ = conn.Close() }()
	_ = conn.SetDeadline(time.Now().Add(connTimeout))
	_, _ = fmt.Fprintf(brw, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Accept: %s\r\n\r\n", base64.StdEncoding.EncodeToString(sum[:]))
	if brw.Flush() != nil {
		return
	}
	_, _ = io.Copy(conn, brw)
}

// echo answers every request with its own record as JSON, so an origin that
// echoes a secret back can be simulated (redaction rows).
func echo(l *logger, kind string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		n, body := readBody(r.Body)
		rec := Record{Kind: kind, Method: r.Method, URL: r.RequestURI, Host: r.Host, Headers: r.Header,
			Body: body, BodyLen: n, Remote: r.RemoteAddr}
		if r.TLS != nil {
			rec.SNI = r.TLS.ServerName
		}
		l.log(rec)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(rec)
	}
}

func readBody(r io.Reader) (int64, string) {
	head := make([]byte, maxLoggedBody)
	n, _ := io.ReadFull(r, head)
	rest, _ := io.Copy(io.Discard, io.LimitReader(r, maxBody))
	return int64(n) + rest, string(head[:n])
}

func serveHTTP(l *logger, addr string, cert *tls.Certificate) error {
	kind := "http"
	if cert != nil {
		kind = "https"
	}
	srv := &http.Server{Addr: addr, Handler: route(l, kind), ReadHeaderTimeout: 10 * time.Second}
	if cert == nil {
		return srv.ListenAndServe()
	}
	srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{*cert}, MinVersion: tls.VersionTLS12}
	return srv.ListenAndServeTLS("", "")
}

// connTimeout bounds one connection to the origin's stream servers.
const connTimeout = 10 * time.Second

// serveStream accepts connections on addr and runs handle on each in its
// own goroutine, closing it afterwards.
func serveStream(addr string, handle func(net.Conn)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		go func() {
			defer func() { _ = c.Close() }()
			_ = c.SetDeadline(time.Now().Add(connTimeout))
			handle(c)
		}()
	}
}

// servePackets answers each datagram on addr with what reply returns (no
// answer when it returns nil).
func servePackets(addr string, reply func(msg []byte, from net.Addr) []byte) error {
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		return err
	}
	buf := make([]byte, 1500)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			return err
		}
		if resp := reply(buf[:n], from); resp != nil {
			_, _ = pc.WriteTo(resp, from)
		}
	}
}

func serveTCPEcho(l *logger, addr string) error {
	return serveStream(addr, func(c net.Conn) {
		l.log(Record{Kind: "tcp", Remote: c.RemoteAddr().String()})
		_, _ = io.Copy(c, c)
	})
}

func serveUDPEcho(l *logger, addr string) error {
	return servePackets(addr, func(msg []byte, from net.Addr) []byte {
		l.log(Record{Kind: "udp", Remote: from.String()})
		return msg
	})
}

func serveDNSUDP(l *logger, addr string, ip netip.Addr) error {
	return servePackets(addr, func(q []byte, from net.Addr) []byte {
		return answerAndLog(l, "dns-udp", q, from, ip)
	})
}

func serveDNSTCP(l *logger, addr string, ip netip.Addr) error {
	return serveStream(addr, func(c net.Conn) {
		q, err := readFramed(c)
		if err != nil {
			return
		}
		if resp := answerAndLog(l, "dns-tcp", q, c.RemoteAddr(), ip); resp != nil {
			_ = writeFramed(c, resp)
		}
	})
}

// answerAndLog logs every packet, even one it cannot parse, so that a test
// counting queries sees any that arrived.
// It returns nil for a query it cannot answer.
func answerAndLog(l *logger, kind string, q []byte, from net.Addr, ip netip.Addr) []byte {
	_, name, _ := dnsQuestion(q)
	l.log(Record{Kind: kind, Name: name, Remote: from.String()})
	resp, err := dnsAnswer(q, ip)
	if err != nil {
		return nil
	}
	return resp
}
