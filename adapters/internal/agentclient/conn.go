package agentclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/hashicorp/yamux"

	"github.com/sandgate/sandgate/core/agentwire"
	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
)

// ErrLost: the agent's stream dropped (or the agent died) while a call was
// in flight. The call has no result; the caller decides whether the sandbox
// is gone (ErrNotFound) or the agent alone was lost.
var ErrLost = errors.New("agent stream lost")

// Opener starts the agent in its sandbox (agentwire.Argv) with one engine
// exec, and returns that exec's stdin (Write) and stdout (Read) as one
// stream. Close ends the exec's stdin, which stops the agent.
type Opener func(ctx context.Context) (io.ReadWriteCloser, error)

// Conn is one sandbox's connection to its agent. It is safe for concurrent
// use: every call is an HTTP exchange on its own yamux stream.
type Conn struct {
	open   Opener
	client *http.Client

	mu   sync.Mutex
	sess *yamux.Session
}

// yamuxConfig sizes a stream's window for bulk transfers (the default 256
// KiB caps a stream at one window per round trip) and silences the
// library's log: failures reach the caller as errors.
func yamuxConfig() *yamux.Config {
	c := yamux.DefaultConfig()
	c.MaxStreamWindowSize = 4 << 20
	c.LogOutput = io.Discard
	c.StreamOpenTimeout = 10 * time.Second
	return c
}

// New returns a Conn that starts its agent with open on first use.
func New(open Opener) *Conn {
	c := &Conn{open: open}
	c.client = &http.Client{Transport: &http.Transport{
		// One stream per exchange: a stream of a dropped session is never
		// reused, and yamux makes a stream as cheap as a pooled connection.
		DisableKeepAlives:  true,
		DisableCompression: true,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			st, err := c.openStream(ctx)
			if err != nil {
				return nil, err
			}
			return stream{st}, nil
		},
	}}
	return c
}

// openStream opens a stream on the live session (starting the agent when
// there is none); a session that cannot open one is dropped (ErrLost).
func (c *Conn) openStream(ctx context.Context) (*yamux.Stream, error) {
	s, err := c.session(ctx)
	if err != nil {
		return nil, err
	}
	st, err := s.OpenStream()
	if err != nil {
		c.drop(s)
		return nil, fmt.Errorf("%w: %w", ErrLost, err)
	}
	return st, nil
}

// stream is a yamux stream whose Close also ends a Read in progress: a
// yamux Close only half-closes, and the HTTP transport's reader would wait
// for the agent's side (up to StreamCloseTimeout) after a cancelled call.
type stream struct{ *yamux.Stream }

func (s stream) Close() error {
	_ = s.SetReadDeadline(time.Now())
	return s.Stream.Close()
}

// session returns the live session, starting the agent when there is none.
// The start is under the lock, so concurrent first calls start one agent.
func (c *Conn) session(ctx context.Context) (*yamux.Session, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sess != nil && !c.sess.IsClosed() {
		return c.sess, nil
	}
	rwc, err := c.open(ctx)
	if err != nil {
		return nil, err
	}
	s, err := yamux.Client(rwc, yamuxConfig())
	if err != nil {
		_ = rwc.Close()
		return nil, fmt.Errorf("agent session: %w", err)
	}
	c.sess = s
	return s, nil
}

// drop closes s if it is still the current session, so the next call
// starts a fresh agent.
func (c *Conn) drop(s *yamux.Session) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sess == s {
		c.sess = nil
	}
	_ = s.Close()
}

// Close stops the agent (its stdin ends) and forgets the session; a later
// call starts a new one.
func (c *Conn) Close() error {
	c.mu.Lock()
	s := c.sess
	c.sess = nil
	c.mu.Unlock()
	if s == nil {
		return nil
	}
	return s.Close()
}

// do sends one exchange. A transport failure is ErrLost (wrapping the
// cause) unless ctx ended; a non-2xx answer is its agentwire.Error turned
// back into a sentinel.
func (c *Conn) do(ctx context.Context, req *http.Request) (*http.Response, error) {
	resp, err := c.client.Do(req.WithContext(ctx))
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if errors.Is(err, ErrLost) || errors.Is(err, sandbox.ErrSizeMismatch) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %w", ErrLost, err)
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer func() { _ = resp.Body.Close() }()
	return nil, decodeError(resp)
}

// maxErrorBody bounds an error document, so an agent cannot grow the
// executor's memory with one.
const maxErrorBody = 64 << 10

func decodeError(resp *http.Response) error {
	var e agentwire.Error
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	if err := json.Unmarshal(body, &e); err != nil || e.Code == "" {
		return fmt.Errorf("agent: HTTP %d: %s", resp.StatusCode, domain.Clip(string(body)))
	}
	return e.Err()
}

// url is the request URL of an agentwire route; the host is a placeholder
// (every exchange is dialled on the session).
func url(route string) string { return "http://agent" + route }
