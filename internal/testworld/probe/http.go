package main

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// requestTimeout bounds one proxied exchange.
const requestTimeout = 15 * time.Second

// maxPrint bounds the body a probe prints.
const maxPrint = 64 << 10

// headerFlags collects repeated --header "Name: value" flags.
type headerFlags []string

func (h *headerFlags) String() string     { return strings.Join(*h, ", ") }
func (h *headerFlags) Set(v string) error { *h = append(*h, v); return nil }

// httpFlags are the flags of the http command.
type httpFlags struct {
	proxy    string
	direct   bool
	method   string
	headers  headerFlags
	bodySize int64
	body     string
	caFile   string
	host     string
}

func parseHTTPFlags(args []string) (*httpFlags, string, error) {
	f := &httpFlags{}
	fs := flag.NewFlagSet("http", flag.ContinueOnError)
	fs.StringVar(&f.proxy, "proxy", "", "proxy URL (default: $HTTP_PROXY)")
	fs.BoolVar(&f.direct, "direct", false, "no proxy")
	fs.StringVar(&f.method, "method", "", "method (default GET, POST with a body)")
	fs.Var(&f.headers, "header", "request header \"Name: value\" (repeatable)")
	fs.Int64Var(&f.bodySize, "body-size", 0, "send a body of this many bytes")
	fs.StringVar(&f.body, "body", "", "send this body")
	fs.StringVar(&f.caFile, "cafile", "", "extra trusted roots (PEM) on top of the system pool")
	fs.StringVar(&f.host, "host", "", "Host header, when it must differ from the URL's host")
	if err := fs.Parse(args); err != nil {
		return nil, "", err
	}
	if fs.NArg() != 1 {
		return nil, "", usageError("http [flags] URL")
	}
	return f, fs.Arg(0), nil
}

// runHTTP sends one request, through the proxy unless --direct, and prints
// "status: N", the issuer of the server's leaf for https, and the body.
func runHTTP(args []string) (bool, error) {
	f, target, err := parseHTTPFlags(args)
	if err != nil {
		return false, err
	}
	req, err := f.request(target)
	if err != nil {
		return false, err
	}
	if (f.bodySize > 0 || f.host != "") && req.URL.Scheme == "http" && !f.direct {
		return sendRaw(f.proxy, req, req.Body)
	}
	tr, err := f.transport()
	if err != nil {
		return false, err
	}
	client := &http.Client{Transport: tr, Timeout: requestTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		return false, err
	}
	defer func() { _ = resp.Body.Close() }()
	fmt.Println("status:", resp.StatusCode)
	if resp.TLS != nil && len(resp.TLS.PeerCertificates) > 0 {
		fmt.Println("issuer:", resp.TLS.PeerCertificates[0].Issuer.CommonName)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxPrint))
	fmt.Printf("%s\n", body)
	return err == nil, err
}

func (f *httpFlags) request(target string) (*http.Request, error) {
	var body io.Reader
	method := f.method
	switch {
	case f.bodySize > 0:
		body = io.LimitReader(repeatReader('a'), f.bodySize)
	case f.body != "":
		body = strings.NewReader(f.body)
	}
	if method == "" {
		method = http.MethodGet
		if body != nil {
			method = http.MethodPost
		}
	}
	req, err := http.NewRequest(method, target, body)
	if err != nil {
		return nil, err
	}
	if f.bodySize > 0 {
		req.ContentLength = f.bodySize
	}
	req.Host = req.URL.Host
	if f.host != "" {
		req.Host = f.host
	}
	for _, h := range f.headers {
		k, v, ok := strings.Cut(h, ":")
		if !ok {
			return nil, usageError("--header %q: want Name: value", h)
		}
		req.Header.Add(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	return req, nil
}

// transport builds a transport that always uses the proxy it is given:
// http.ProxyFromEnvironment would skip it for loopback targets, which are
// exactly what the SSRF rows send.
func (f *httpFlags) transport() (*http.Transport, error) {
	roots, err := rootPool(f.caFile)
	if err != nil {
		return nil, err
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
		DisableKeepAlives: true}
	if f.direct {
		return tr, nil
	}
	p, err := proxyURL(f.proxy)
	if err != nil {
		return nil, err
	}
	tr.Proxy = http.ProxyURL(p)
	return tr, nil
}

func proxyURL(flagValue string) (*url.URL, error) {
	raw := flagValue
	if raw == "" {
		raw = os.Getenv("HTTP_PROXY")
	}
	if raw == "" {
		return nil, usageError("no --proxy and no HTTP_PROXY")
	}
	return url.Parse(raw)
}

// rootPool is the system pool (which honours SSL_CERT_FILE) plus extra.
func rootPool(extra string) (*x509.CertPool, error) {
	pool, err := x509.SystemCertPool()
	if err != nil {
		return nil, err
	}
	if extra == "" {
		return pool, nil
	}
	pem, err := os.ReadFile(extra)
	if err != nil {
		return nil, err
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s: no certificate", extra)
	}
	return pool, nil
}

// sendRaw writes the request through the proxy by hand, reading the answer
// at the same time. By hand, because Go's client builds the absolute URI
// from req.Host (a Host that differs from the URL cannot be sent), and
// because a proxy that refuses a large body (413) answers and closes before
// the body is all sent, where Go's client would report only the failed
// write.
func sendRaw(proxy string, req *http.Request, body io.Reader) (bool, error) {
	conn, err := dialProxy(proxy)
	if err != nil {
		return false, err
	}
	defer func() { _ = conn.Close() }()
	if err := conn.SetDeadline(time.Now().Add(requestTimeout)); err != nil {
		return false, err
	}
	go func() {
		// Write errors are expected when the proxy refuses early.
		w := bufio.NewWriter(conn)
		_, _ = fmt.Fprintf(w, "%s %s HTTP/1.1\r\nHost: %s\r\n", req.Method, req.URL.String(), req.Host)
		_ = req.Header.Write(w)
		if body != nil {
			_, _ = fmt.Fprintf(w, "Content-Length: %d\r\n", req.ContentLength)
		}
		_, _ = w.WriteString("\r\n")
		if body != nil {
			_, _ = io.Copy(w, body)
		}
		_ = w.Flush()
	}()
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		return false, err
	}
	defer func() { _ = resp.Body.Close() }()
	fmt.Println("status:", resp.StatusCode)
	out, err := io.ReadAll(io.LimitReader(resp.Body, maxPrint))
	fmt.Printf("%s\n", out)
	return err == nil, err
}

type repeatReader byte

func (r repeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}

// runConnect opens a raw CONNECT tunnel to AUTHORITY through the proxy, then
// sends one GET with the given Host — over TLS with the given SNI when
// --tls — so the test can make the authority, the SNI and the Host differ.
// It prints "connect: N", then the issuer of the leaf and the inner
// response's status and body. Certificates are not verified here: the
// point is what the gate does, and the issuer line says whose leaf it was.
func runConnect(args []string) (bool, error) {
	fs := flag.NewFlagSet("connect", flag.ContinueOnError)
	proxy := fs.String("proxy", "", "proxy URL (default: $HTTP_PROXY)")
	host := fs.String("host", "", "Host of the inner request (default: the authority)")
	sni := fs.String("sni", "", "SNI of the inner TLS handshake (default: the authority's host)")
	useTLS := fs.Bool("tls", false, "speak TLS inside the tunnel")
	path := fs.String("path", "/", "path of the inner request")
	if err := fs.Parse(args); err != nil {
		return false, err
	}
	if fs.NArg() != 1 {
		return false, usageError("connect [flags] AUTHORITY")
	}
	authority := fs.Arg(0)
	conn, br, err := openTunnel(*proxy, authority)
	if err != nil || conn == nil {
		return false, err
	}
	defer func() { _ = conn.Close() }()
	authHost, _, _ := net.SplitHostPort(authority)
	inner := net.Conn(&bufConn{Conn: conn, r: br})
	if *useTLS {
		inner, err = tlsInner(inner, firstNonEmpty(*sni, authHost))
		if err != nil {
			return false, err
		}
	}
	return innerRequest(inner, firstNonEmpty(*host, authority), *path)
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// openTunnel sends CONNECT and prints the proxy's status; a nil conn means
// the proxy refused (already printed).
func openTunnel(proxy, authority string) (net.Conn, *bufio.Reader, error) {
	conn, err := dialProxy(proxy)
	if err != nil {
		return nil, nil, err
	}
	if err := conn.SetDeadline(time.Now().Add(requestTimeout)); err != nil {
		_ = conn.Close()
		return nil, nil, err
	}
	if _, err := fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", authority, authority); err != nil {
		_ = conn.Close()
		return nil, nil, err
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		_ = conn.Close()
		return nil, nil, err
	}
	fmt.Println("connect:", resp.StatusCode)
	if resp.StatusCode != http.StatusOK {
		_ = conn.Close()
		return nil, nil, nil
	}
	return conn, br, nil
}

func tlsInner(c net.Conn, sni string) (net.Conn, error) {
	tc := tls.Client(c, &tls.Config{ServerName: sni, InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}) //nolint:gosec // the issuer is printed and asserted instead
	if err := tc.Handshake(); err != nil {
		return nil, fmt.Errorf("tls handshake: %w", err)
	}
	if certs := tc.ConnectionState().PeerCertificates; len(certs) > 0 {
		fmt.Println("issuer:", certs[0].Issuer.CommonName)
	}
	return tc, nil
}

func innerRequest(c net.Conn, host, path string) (bool, error) {
	var req bytes.Buffer
	fmt.Fprintf(&req, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", path, host)
	if _, err := c.Write(req.Bytes()); err != nil {
		return false, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return false, fmt.Errorf("inner response: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	fmt.Println("status:", resp.StatusCode)
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxPrint))
	fmt.Printf("%s\n", body)
	return err == nil, err
}

// bufConn reads through the bufio.Reader that read the CONNECT response, so
// no byte the proxy sent after it is lost.
type bufConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufConn) Read(p []byte) (int, error) { return c.r.Read(p) }
