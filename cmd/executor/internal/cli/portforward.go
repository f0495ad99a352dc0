package cli

import (
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/sandgate/sandgate/adapters/httpapi"
	"github.com/sandgate/sandgate/core/domain"
)

// runPortForward is `executor port-forward SESSION [LOCAL:]REMOTE`: it
// listens on 127.0.0.1:LOCAL and carries each connection it accepts to
// REMOTE inside the sandbox over a WebSocket of its own, until Ctrl-C.
func runPortForward(ctx context.Context, s *Streams, args []string) error {
	fset, c := newFlags("port-forward", false)
	pos, err := parseArgs(fset, s, args)
	if err != nil {
		return err
	}
	if err := exactArgs(pos, "SESSION", "[LOCAL:]REMOTE"); err != nil {
		return err
	}
	sid, err := sessionArg(pos[0])
	if err != nil {
		return err
	}
	local, remote, err := portsArg(pos[1])
	if err != nil {
		return err
	}
	cl, err := c.client(s)
	if err != nil {
		return err
	}
	// A session that is not running fails now, not at the first connection.
	if _, err := cl.Get(ctx, sid); err != nil {
		return call{url: c.baseURL(s), sid: sid}.explain(err)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(local)))
	if err != nil {
		return err
	}
	_, _ = fmt.Fprintf(s.Stdout, "forwarding %s -> session %s port %d (Ctrl-C stops)\n", ln.Addr(), sid, remote)
	f := &forwarder{cl: cl, sid: sid, port: remote, stderr: s.Stderr, open: map[net.Conn]struct{}{}}
	return f.serve(ctx, ln)
}

// portsArg parses [LOCAL:]REMOTE: LOCAL absent is REMOTE, 0 any free port.
func portsArg(arg string) (local, remote int, err error) {
	l, r, both := strings.Cut(arg, ":")
	if !both {
		l, r = arg, arg
	}
	remote, err = strconv.Atoi(r)
	if err != nil || remote < 1 || remote > 65535 {
		return 0, 0, usagef("remote port %q: want 1..65535", r)
	}
	local, err = strconv.Atoi(l)
	if err != nil || local < 0 || local > 65535 {
		return 0, 0, usagef("local port %q: want 0..65535 (0: any free port)", l)
	}
	return local, remote, nil
}

// forwarder carries the connections of one port-forward.
type forwarder struct {
	cl     *httpapi.Client
	sid    domain.ID
	port   int
	stderr io.Writer
	mu     sync.Mutex
	open   map[net.Conn]struct{}
	closed bool // Ctrl-C swept the connections: track no more
	wg     sync.WaitGroup
}

// serve accepts until ctx ends, then closes the listener and every
// connection and returns once their goroutines have.
func (f *forwarder) serve(ctx context.Context, ln net.Listener) error {
	stop := context.AfterFunc(ctx, func() {
		_ = ln.Close()
		f.mu.Lock()
		defer f.mu.Unlock()
		f.closed = true
		for c := range f.open {
			_ = c.Close()
		}
	})
	defer stop()
	defer f.wg.Wait()
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil // Ctrl-C is how a port-forward ends
			}
			return err
		}
		if !f.track(conn) {
			_ = conn.Close()
			return nil
		}
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			defer f.untrack(conn)
			f.carry(ctx, conn)
		}()
	}
}

// carry connects conn to the port and copies both ways until either side
// ends, then closes both: a WebSocket has no half-close to pass on.
func (f *forwarder) carry(ctx context.Context, conn net.Conn) {
	remote, err := f.cl.PortForward(ctx, f.sid, f.port)
	if err != nil {
		_ = conn.Close()
		if ctx.Err() == nil {
			_, _ = fmt.Fprintf(f.stderr, "executor port-forward: %s: %s\n", conn.RemoteAddr(), err)
		}
		return
	}
	if !f.track(remote) {
		_ = remote.Close()
		_ = conn.Close()
		return
	}
	defer f.untrack(remote)
	var once sync.Once
	closeBoth := func() { once.Do(func() { _ = conn.Close(); _ = remote.Close() }) }
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(remote, conn)
		closeBoth()
	}()
	_, _ = io.Copy(conn, remote)
	closeBoth()
	<-done
}

// track records an open connection for the Ctrl-C sweep, reporting false
// once the sweep has run (the caller closes it then).
func (f *forwarder) track(c net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false
	}
	f.open[c] = struct{}{}
	return true
}

func (f *forwarder) untrack(c net.Conn) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.open, c)
}
