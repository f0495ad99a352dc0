package portfake

import (
	"context"
	"net"

	"github.com/sandgate/sandgate/core/sandbox"
)

// Serve makes port listen in the sandbox: each DialPort to it runs serve
// on the server's end of an in-memory connection (net.Pipe, which has no
// half-close), closed when serve returns. A nil serve closes the port.
func (b *Sandbox) Serve(port int, serve func(net.Conn)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if serve == nil {
		delete(b.servers, port)
		return
	}
	if b.servers == nil {
		b.servers = map[int]func(net.Conn){}
	}
	b.servers[port] = serve
}

// DialPort connects to a port Serve opened. Errors: sandbox.ErrInvalidPort;
// sandbox.ErrPortClosed; ErrNotFound.
func (b *Sandbox) DialPort(ctx context.Context, port int) (net.Conn, error) {
	if err := b.enter(ctx, OpDialPort); err != nil {
		return nil, err
	}
	if err := sandbox.CheckPort(port); err != nil {
		return nil, err
	}
	b.mu.Lock()
	serve := b.servers[port]
	b.mu.Unlock()
	if serve == nil {
		return nil, sandbox.ErrPortClosed
	}
	client, server := net.Pipe()
	go func() {
		defer func() { _ = server.Close() }()
		serve(server)
	}()
	return client, nil
}
