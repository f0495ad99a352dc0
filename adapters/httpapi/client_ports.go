package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/coder/websocket"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/core/session"
)

// DialPort implements ports.Service: PortForward.
func (c *Client) DialPort(ctx context.Context, sid domain.ID, port int) (net.Conn, error) {
	return c.PortForward(ctx, sid, port)
}

// PortForward connects to a TCP port listening inside the session's
// sandbox, over a WebSocket to …/ports/{port}:connect. ctx bounds the
// handshake only; the caller closes the connection. Errors: *APIError
// (sandbox.ErrPortClosed, sandbox.ErrNoAgent, sandbox.ErrNotFound,
// ErrTooManyStreams, ErrUnauthorized …); the transport's.
func (c *Client) PortForward(ctx context.Context, sid domain.ID, port int) (net.Conn, error) {
	if err := sandbox.CheckPort(port); err != nil {
		return nil, fmt.Errorf("%w: %w", session.ErrInvalidRequest, err)
	}
	u := *c.base
	u.Path += sessionPath(sid, "/ports/"+strconv.Itoa(port)+opConnect)
	h := http.Header{}
	if c.token != "" {
		h.Set("Authorization", bearerScheme+" "+c.token)
	}
	ws, resp, err := websocket.Dial(ctx, u.String(), &websocket.DialOptions{HTTPClient: c.hc, HTTPHeader: h})
	if err != nil {
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
			return nil, decodeError(resp)
		}
		return nil, fmt.Errorf("port-forward %s:%d: %w", sid, port, err)
	}
	return wsConn{websocket.NetConn(context.WithoutCancel(ctx), ws, websocket.MessageBinary)}, nil
}

// wsConn is a forwarded connection whose Close after the executor closed
// it (the server inside ended) is no error.
type wsConn struct{ net.Conn }

func (c wsConn) Close() error {
	if err := c.Conn.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		return err
	}
	return nil
}

// SignPortURL is POST …/ports/{port}:sign: a URL of the port's preview that
// a browser can open without the API token until it expires (ttl 0: the
// server's default, an hour; at most a day).
func (c *Client) SignPortURL(ctx context.Context, sid domain.ID, port int, ttl time.Duration) (SignResponse, error) {
	var out SignResponse
	err := c.callJSON(ctx, http.MethodPost, sessionPath(sid, "/ports/"+strconv.Itoa(port)+opSign), nil,
		signRequest{TTLSeconds: int64(ttl / time.Second)}, &out)
	return out, err
}
