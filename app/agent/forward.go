package agent

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/sandgate/sandgate/core/agentwire"
	"github.com/sandgate/sandgate/core/sandbox"
)

// dialTimeout bounds the dial of a forwarded port: a loopback dial answers
// at once, unless the listener's backlog is full.
const dialTimeout = 10 * time.Second

// forward serves agentwire.PathForward: it dials the port on the sandbox's
// loopback, then hands the stream over to the connection (101) and copies
// both ways until both directions ended.
func forward(w http.ResponseWriter, r *http.Request) {
	port, err := strconv.Atoi(r.URL.Query().Get(agentwire.QueryPort))
	if err == nil {
		err = sandbox.CheckPort(port)
	}
	if err != nil {
		writeError(w, r, fmt.Errorf("%w: %s=%q", errInvalid, agentwire.QueryPort, r.URL.Query().Get(agentwire.QueryPort)))
		return
	}
	tcp, err := dialLoopback(r.Context(), port)
	if err != nil {
		writeError(w, r, err)
		return
	}
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		_ = tcp.Close()
		writeError(w, r, err)
		return
	}
	_, err = io.WriteString(conn, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: "+
		agentwire.ForwardProtocol+"\r\n\r\n")
	if err != nil {
		_ = tcp.Close()
		_ = conn.Close()
		return
	}
	splice(conn, brw.Reader, tcp)
}

// dialLoopback connects to port on 127.0.0.1, or on ::1 when that is
// refused (a server bound to ::1 alone). Both refused is
// sandbox.ErrPortClosed.
func dialLoopback(ctx context.Context, port int) (*net.TCPConn, error) {
	d := net.Dialer{Timeout: dialTimeout}
	p := strconv.Itoa(port)
	var errs []error
	for _, host := range []string{"127.0.0.1", "::1"} {
		c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, p))
		if err == nil {
			return c.(*net.TCPConn), nil
		}
		errs = append(errs, err)
	}
	if errors.Is(errs[0], syscall.ECONNREFUSED) {
		return nil, fmt.Errorf("port %d: %w", port, sandbox.ErrPortClosed)
	}
	return nil, fmt.Errorf("port %d: %w", port, errors.Join(errs...))
}

// splice copies both ways between the caller's stream (read through br,
// which may hold bytes read past the request) and the TCP connection. A
// clean end of input is passed on as a half-close, so a request-response
// protocol that reads to EOF works; a failure either way ends both
// connections at once, so no copy outlives the other side.
func splice(stream net.Conn, br *bufio.Reader, tcp *net.TCPConn) {
	var once sync.Once
	abort := func() {
		once.Do(func() {
			_ = tcp.Close()
			// A yamux stream's Close only half-closes: the deadline ends a
			// Read or Write in progress.
			_ = stream.SetDeadline(time.Now())
			_ = stream.Close()
		})
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		if _, err := io.Copy(tcp, br); err != nil {
			abort()
			return
		}
		_ = tcp.CloseWrite()
	}()
	go func() {
		defer wg.Done()
		if _, err := io.Copy(stream, tcp); err != nil {
			abort()
			return
		}
		closeWrite(stream)
	}()
	wg.Wait()
	abort()
}

// closeWrite half-closes c: CloseWrite where it has one (TCP), else Close,
// which a yamux stream (the agent's transport) implements as a half-close.
func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
		return
	}
	_ = c.Close()
}
