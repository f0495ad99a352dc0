package agent_test

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/agentwire"
)

// upperServer listens on network's loopback and answers each connection
// with what it read up to EOF, upper-cased, then closes it.
func upperServer(t *testing.T, addr string) int {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	done := make(chan struct{})
	t.Cleanup(func() { _ = ln.Close(); <-done })
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b, _ := io.ReadAll(c)
			_, _ = c.Write(bytes.ToUpper(b))
			_ = c.Close()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

// openForward sends a PathForward request for port on a raw connection to
// the agent, with early bytes right behind the request (as a client may
// send them before the 101), and returns the connection, its reader and
// the answer.
func openForward(t *testing.T, base, port string, early string) (*net.TCPConn, *bufio.Reader, *http.Response) {
	t.Helper()
	u, err := url.Parse(base)
	require.NoError(t, err)
	c, err := net.Dial("tcp", u.Host)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	q := url.Values{agentwire.QueryPort: {port}}
	_, err = io.WriteString(c, "POST "+agentwire.PathForward+"?"+q.Encode()+" HTTP/1.1\r\nHost: agent\r\n"+
		"Connection: Upgrade\r\nUpgrade: "+agentwire.ForwardProtocol+"\r\nContent-Length: 0\r\n\r\n"+early)
	require.NoError(t, err)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	return c.(*net.TCPConn), br, resp
}

func TestForwardEchoesWithHalfClose(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0"} {
		port := upperServer(t, addr)
		c, br, resp := openForward(t, srv.URL, strconv.Itoa(port), "hello ")
		require.Equal(t, http.StatusSwitchingProtocols, resp.StatusCode, addr)
		require.Equal(t, agentwire.ForwardProtocol, resp.Header.Get("Upgrade"))
		_, err := io.WriteString(c, "world")
		require.NoError(t, err)
		// The server answers only once it read EOF: the half-close passes.
		require.NoError(t, c.CloseWrite())
		got, err := io.ReadAll(br)
		require.NoError(t, err)
		require.Equal(t, "HELLO WORLD", string(got), addr)
	}
}

func TestForwardRefusesAClosedPort(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	_, _, resp := openForward(t, srv.URL, strconv.Itoa(port), "")
	require.Equal(t, http.StatusBadGateway, resp.StatusCode)
	doc := decodeError(t, resp)
	require.Equal(t, agentwire.CodeConnectionRefused, doc.Code)
	require.Contains(t, doc.Message, strconv.Itoa(port))
}

func TestForwardRefusesABadPort(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	for _, port := range []string{"", "0", "65536", "-1", "http"} {
		_, _, resp := openForward(t, srv.URL, port, "")
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, port)
		require.Equal(t, agentwire.CodeInvalid, decodeError(t, resp).Code, port)
	}
}

// TestForwardEndsWithTheCaller: a caller that drops its connection ends
// the agent's connection to the server too (the server sees EOF), and
// nothing of the forward outlives it (goleak in TestMain).
func TestForwardEndsWithTheCaller(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	c, br, resp := openForward(t, srv.URL, strconv.Itoa(ln.Addr().(*net.TCPAddr).Port), "")
	require.Equal(t, http.StatusSwitchingProtocols, resp.StatusCode)
	inside, err := ln.Accept()
	require.NoError(t, err)
	defer func() { _ = inside.Close() }()
	// The server talks first, the caller hears it, then hangs up.
	_, err = io.WriteString(inside, "ready\n")
	require.NoError(t, err)
	line, err := br.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "ready\n", line)
	require.NoError(t, c.Close())
	require.NoError(t, inside.SetReadDeadline(time.Now().Add(5*time.Second)))
	rest, err := io.ReadAll(inside)
	require.NoError(t, err, "the server sees the end, not a timeout")
	require.Empty(t, strings.TrimSpace(string(rest)))
}
