package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"
)

// runStream GETs URL through the proxy and prints every line of the body
// as it arrives, with the milliseconds since the request was sent
// ("t=123 data: 1"): an SSE stream buffered by the gate shows as lines that
// all arrive together at the end.
func runStream(args []string) (bool, error) {
	if len(args) != 1 {
		return false, usageError("stream URL")
	}
	p, err := proxyURL("")
	if err != nil {
		return false, err
	}
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(p), DisableCompression: true},
		Timeout: requestTimeout}
	start := time.Now()
	resp, err := client.Get(args[0])
	if err != nil {
		return false, err
	}
	defer func() { _ = resp.Body.Close() }()
	fmt.Println("status:", resp.StatusCode)
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if sc.Text() != "" {
			fmt.Printf("t=%d %s\n", time.Since(start).Milliseconds(), sc.Text())
		}
	}
	return sc.Err() == nil, sc.Err()
}

// runUpgrade sends a WebSocket upgrade for URL (http) through the proxy,
// then one message, and prints the status and what came back. The origin
// echoes raw bytes after its 101, so no framing is needed to see that the
// gate relays both ways.
func runUpgrade(args []string) (bool, error) {
	if len(args) != 1 {
		return false, usageError("upgrade http://HOST/PATH")
	}
	u, err := url.Parse(args[0])
	if err != nil {
		return false, err
	}
	conn, err := dialProxy("")
	if err != nil {
		return false, err
	}
	defer func() { _ = conn.Close() }()
	if err := conn.SetDeadline(time.Now().Add(requestTimeout)); err != nil {
		return false, err
	}
	if _, err := fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n", u.String(), u.Host); err != nil {
		return false, err
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodGet})
	if err != nil {
		return false, err
	}
	fmt.Println("status:", resp.StatusCode)
	if resp.StatusCode != http.StatusSwitchingProtocols {
		return false, nil
	}
	const msg = "probe-ws-message"
	if _, err := conn.Write([]byte(msg)); err != nil {
		return false, err
	}
	buf := make([]byte, len(msg))
	if _, err := readFull(&bufConn{Conn: conn, r: br}, buf); err != nil {
		return false, err
	}
	fmt.Printf("echo: %s\n", buf)
	return true, nil
}

// runSlowloris opens a request to the proxy and trickles header lines
// forever; it prints when the proxy gives up on it ("closed after …"),
// or fails when the proxy still waits after --for.
func runSlowloris(args []string) (bool, error) {
	fs := flag.NewFlagSet("slowloris", flag.ContinueOnError)
	limit := fs.Duration("for", 60*time.Second, "give up after")
	if err := fs.Parse(args); err != nil {
		return false, err
	}
	if fs.NArg() != 1 {
		return false, usageError("slowloris [--for D] http://HOST/PATH")
	}
	// The clock starts before the dial: the proxy's header timeout starts
	// when it accepts, which a loaded machine can schedule before the dial
	// returns here (CI once measured 9 s against a 10 s timeout).
	start := time.Now()
	conn, err := dialProxy("")
	if err != nil {
		return false, err
	}
	defer func() { _ = conn.Close() }()
	if _, err := fmt.Fprintf(conn, "GET %s HTTP/1.1\r\n", fs.Arg(0)); err != nil {
		return false, err
	}
	buf := make([]byte, 512)
	for time.Since(start) < *limit {
		_ = conn.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		if n, err := conn.Read(buf); n > 0 || !isTimeout(err) {
			fmt.Printf("closed after %ds: %q %v\n", int(time.Since(start).Seconds()), buf[:n], err)
			return true, nil
		}
		if _, err := conn.Write([]byte("X-Trickle: a\r\n")); err != nil {
			fmt.Printf("closed after %ds: %v\n", int(time.Since(start).Seconds()), err)
			return true, nil
		}
	}
	return false, fmt.Errorf("still open after %s", *limit)
}

// dialProxy connects to the proxy (--proxy flagValue, else $HTTP_PROXY).
func dialProxy(flagValue string) (net.Conn, error) {
	p, err := proxyURL(flagValue)
	if err != nil {
		return nil, err
	}
	return net.DialTimeout("tcp", p.Host, dialTimeout)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
