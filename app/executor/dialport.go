package executor

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/core/session"
	"github.com/sandgate/sandgate/ports"
)

// DialPort connects to a TCP port listening inside the session's sandbox
// (Sandbox.DialPort). The session counts as busy until the connection is
// closed, so the reaper leaves a sandbox alone while something is
// forwarded into it.
func (s *Service) DialPort(ctx context.Context, sid domain.ID, port int) (net.Conn, error) {
	if err := sandbox.CheckPort(port); err != nil {
		return nil, fmt.Errorf("%w: %w", session.ErrInvalidRequest, err)
	}
	end, err := s.begin(ctx, sid)
	if err != nil {
		return nil, err
	}
	var conn net.Conn
	err = s.withSandbox(ctx, sid, always, func(sb ports.Sandbox) (err error) {
		conn, err = sb.DialPort(ctx, port)
		return err
	})
	if err != nil {
		end()
		return nil, err
	}
	return &busyConn{Conn: conn, end: end}, nil
}

// errNoHalfClose: the sandbox's connection cannot end one direction alone.
var errNoHalfClose = errors.New("connection has no half-close")

// busyConn ends its session's call when closed.
type busyConn struct {
	net.Conn
	end func()
}

func (c *busyConn) Close() error {
	defer c.end()
	return c.Conn.Close()
}

// CloseWrite half-closes the connection when the sandbox's has a half-close.
func (c *busyConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errNoHalfClose
}
