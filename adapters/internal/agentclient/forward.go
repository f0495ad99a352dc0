package agentclient

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	neturl "net/url"
	"strconv"
	"time"

	"github.com/hashicorp/yamux"

	"github.com/sandgate/sandgate/core/agentwire"
	"github.com/sandgate/sandgate/core/sandbox"
)

// Dial connects to port on the sandbox's loopback through the agent
// (agentwire.PathForward) and returns the connection: a yamux stream of
// its own, carrying raw bytes once the agent switched protocols. ctx bounds
// the dial only, not the connection. Errors: sandbox.ErrInvalidPort;
// sandbox.ErrPortClosed (nothing listens); ErrLost; the context's.
func (c *Conn) Dial(ctx context.Context, port int) (net.Conn, error) {
	if err := sandbox.CheckPort(port); err != nil {
		return nil, err
	}
	st, err := c.openStream(ctx)
	if err != nil {
		return nil, err
	}
	conn, err := handshake(ctx, st, port)
	if err != nil {
		_ = stream{st}.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	return conn, nil
}

// handshake sends the forward request on st and reads the agent's answer:
// the connection on a 101, the agent's error otherwise. The context's end
// interrupts it through the stream's deadline.
func handshake(ctx context.Context, st *yamux.Stream, port int) (net.Conn, error) {
	stop := context.AfterFunc(ctx, func() { _ = st.SetDeadline(time.Now()) })
	defer stop()
	q := neturl.Values{agentwire.QueryPort: {strconv.Itoa(port)}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url(agentwire.PathForward)+"?"+q.Encode(), http.NoBody)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", agentwire.ForwardProtocol)
	if err := req.Write(st); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrLost, err)
	}
	br := bufio.NewReader(st)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrLost, err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		defer func() { _ = resp.Body.Close() }()
		return nil, decodeError(resp)
	}
	if !stop() {
		return nil, ctx.Err() // the deadline may have been set already
	}
	return &forwarded{stream: stream{st}, br: br}, nil
}

// forwarded is a forwarded connection: the stream, read through the
// handshake's reader so that bytes the agent sent right behind its 101 are
// not lost.
type forwarded struct {
	stream
	br *bufio.Reader
}

func (f *forwarded) Read(p []byte) (int, error) { return f.br.Read(p) }

// CloseWrite half-closes the connection: the server inside reads EOF and
// may still answer. (A yamux Close is that half-close.)
func (f *forwarded) CloseWrite() error { return f.Stream.Close() }

// Close ends both directions here. The agent sees the end of its input; a
// server that then keeps writing is cut when the unanswered stream is reset
// (yamux's StreamCloseTimeout).
func (f *forwarded) Close() error { return f.stream.Close() }
