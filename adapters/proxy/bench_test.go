package proxy

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/gatewire"
)

// Loopback benchmarks for the PERFORMANCE rows gate-http, gate-connect and
// gate-mitm: each runs the same transfer direct and through the proxy.
// Run: go test -run '^$' -bench . -benchtime 5x ./adapters/proxy/

// benchProxy runs a proxy with cfg on loopback (no spans, no logs).
func benchProxy(b *testing.B, opts Options, cfg gatewire.Config) (*Proxy, string) {
	b.Helper()
	opts.SessionID = testSID
	p, err := New(opts)
	require.NoError(b, err)
	require.NoError(b, p.SetConfig(cfg))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(b, err)
	go func() { _ = p.Serve(ln) }()
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testWait)
		defer cancel()
		_ = p.Shutdown(ctx)
	})
	return p, ln.Addr().String()
}

func BenchmarkPlainGET1KiB(b *testing.B) {
	body := bytes.Repeat([]byte("x"), 1024)
	o := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(body) }))
	b.Cleanup(o.Close)
	_, addr := benchProxy(b, Options{}, limited([]string{"127.0.0.1"}, nil, nil))
	run := func(b *testing.B, proxy func(*http.Request) (*url.URL, error)) {
		c := &http.Client{Transport: &http.Transport{Proxy: proxy, MaxIdleConnsPerHost: 1}}
		defer c.CloseIdleConnections()
		lat := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for b.Loop() {
			t0 := time.Now()
			resp, err := c.Get(o.URL + "/")
			if err != nil {
				b.Fatal(err)
			}
			n, _ := io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if n != int64(len(body)) || resp.StatusCode != http.StatusOK {
				b.Fatalf("status %d, %d bytes", resp.StatusCode, n)
			}
			lat = append(lat, time.Since(t0))
		}
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	}
	b.Run("direct", func(b *testing.B) { run(b, nil) })
	b.Run("proxy", func(b *testing.B) { run(b, http.ProxyURL(&url.URL{Scheme: "http", Host: addr})) })
}

const bulkBytes = 64 << 20

// tcpServer runs handle on every connection to a loopback listener.
func tcpServer(tb testing.TB, handle func(net.Conn)) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer func() { _ = c.Close() }()
				handle(c)
			}()
		}
	}()
	return ln.Addr().String()
}

// tunnelRun runs one transfer per iteration, direct to origin and through
// a CONNECT tunnel of the proxy at addr; r reads what the origin sends.
func tunnelRun(b *testing.B, origin, addr string, transfer func(b *testing.B, c net.Conn, r io.Reader)) {
	b.Run("direct", func(b *testing.B) {
		b.SetBytes(bulkBytes)
		for b.Loop() {
			c, err := net.Dial("tcp", origin)
			if err != nil {
				b.Fatal(err)
			}
			transfer(b, c, c)
		}
	})
	b.Run("proxy", func(b *testing.B) {
		b.SetBytes(bulkBytes)
		for b.Loop() {
			c, br := connect(b, addr, origin)
			transfer(b, c, br)
		}
	})
}

// BenchmarkConnect64MiB: the origin sends, the client reads.
func BenchmarkConnect64MiB(b *testing.B) {
	chunk := make([]byte, 256<<10)
	origin := tcpServer(b, func(c net.Conn) {
		for sent := 0; sent < bulkBytes; sent += len(chunk) {
			if _, err := c.Write(chunk); err != nil {
				return
			}
		}
	})
	_, addr := benchProxy(b, Options{}, limited([]string{"127.0.0.1"}, nil, nil))
	buf := make([]byte, 256<<10)
	tunnelRun(b, origin, addr, func(b *testing.B, c net.Conn, r io.Reader) {
		n, err := io.CopyBuffer(io.Discard, onlyReader{r}, buf)
		_ = c.Close()
		if err != nil || n != bulkBytes {
			b.Fatalf("%d bytes: %v", n, err)
		}
	})
}

// BenchmarkConnectUpload64MiB is the other direction of gate-connect: the
// client sends, the origin reads and answers with the count it read.
func BenchmarkConnectUpload64MiB(b *testing.B) {
	origin := tcpServer(b, func(c net.Conn) {
		n, _ := io.CopyBuffer(io.Discard, onlyReader{c}, make([]byte, 256<<10))
		_, _ = c.Write(binary.BigEndian.AppendUint64(nil, uint64(n)))
	})
	_, addr := benchProxy(b, Options{}, limited([]string{"127.0.0.1"}, nil, nil))
	chunk := make([]byte, 256<<10)
	tunnelRun(b, origin, addr, func(b *testing.B, c net.Conn, r io.Reader) {
		defer func() { _ = c.Close() }()
		for sent := 0; sent < bulkBytes; sent += len(chunk) {
			if _, err := c.Write(chunk); err != nil {
				b.Fatal(err)
			}
		}
		if err := c.(*net.TCPConn).CloseWrite(); err != nil {
			b.Fatal(err)
		}
		var got [8]byte
		if _, err := io.ReadFull(r, got[:]); err != nil || binary.BigEndian.Uint64(got[:]) != bulkBytes {
			b.Fatalf("origin read %d bytes: %v", binary.BigEndian.Uint64(got[:]), err)
		}
	})
}

// onlyReader hides WriteTo, so a benchmark client reads with its own
// (large) buffer rather than io.Discard's 8 KiB one.
type onlyReader struct{ io.Reader }

func BenchmarkIntercept64MiB(b *testing.B) {
	chunk := make([]byte, 256<<10)
	o := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(bulkBytes))
		for sent := 0; sent < bulkBytes; sent += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	b.Cleanup(o.Close)
	_, port, _ := net.SplitHostPort(o.Listener.Addr().String())
	roots := x509.NewCertPool()
	roots.AddCert(o.Certificate())
	res := &fakeResolver{answers: map[string][][]netip.Addr{"api.example.com": {addrs("127.0.0.1")}}}
	p, addr := benchProxy(b, Options{Resolve: res.resolve, RootCAs: roots},
		limited([]string{"api.example.com", "127.0.0.1"}, []string{"api.example.com"}, nil))
	caPool := x509.NewCertPool()
	caPool.AppendCertsFromPEM(p.CACertPEM())
	run := func(b *testing.B, tr *http.Transport, url string) {
		c := &http.Client{Transport: tr}
		defer c.CloseIdleConnections()
		b.SetBytes(bulkBytes)
		for b.Loop() {
			resp, err := c.Get(url)
			if err != nil {
				b.Fatal(err)
			}
			n, err := io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if err != nil || n != bulkBytes {
				b.Fatalf("%d bytes: %v", n, err)
			}
		}
	}
	b.Run("direct", func(b *testing.B) {
		run(b, &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}, o.URL+"/")
	})
	b.Run("proxy", func(b *testing.B) {
		run(b, &http.Transport{
			Proxy:           http.ProxyURL(&url.URL{Scheme: "http", Host: addr}),
			TLSClientConfig: &tls.Config{RootCAs: caPool, MinVersion: tls.VersionTLS12},
		}, "https://api.example.com:"+port+"/")
	})
}
