package httpapi

import (
	"net"
	"sync"
	"time"

	"github.com/sandgate/sandgate/core/domain"
)

// Defaults of the forwarded connections' limits.
const (
	// DefaultMaxStreams bounds the long-lived streams into one session at
	// once (APIOptions.MaxStreams).
	DefaultMaxStreams = 64
	// DefaultPortIdleTimeout closes a forwarded connection that carried no
	// byte either way for that long.
	DefaultPortIdleTimeout = 10 * time.Minute
)

// streamCap counts the long-lived streams of each session.
type streamCap struct {
	max int
	mu  sync.Mutex
	n   map[domain.ID]int
}

// acquire takes a slot of sid, reporting false when all are taken; release
// gives a taken one back.
func (c *streamCap) acquire(sid domain.ID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n[sid] >= c.max {
		return false
	}
	c.n[sid]++
	return true
}

func (c *streamCap) release(sid domain.ID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n[sid]--; c.n[sid] <= 0 {
		delete(c.n, sid)
	}
}

// idleConn closes its connection once no byte moved either way for idle:
// a forgotten forward gives its stream and its session's slot back.
type idleConn struct {
	net.Conn
	idle  time.Duration
	timer *time.Timer
}

func newIdleConn(c net.Conn, idle time.Duration) *idleConn {
	ic := &idleConn{Conn: c, idle: idle}
	ic.timer = time.AfterFunc(idle, func() { _ = c.Close() })
	return ic
}

func (c *idleConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.timer.Reset(c.idle)
	}
	return n, err
}

func (c *idleConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if n > 0 {
		c.timer.Reset(c.idle)
	}
	return n, err
}

func (c *idleConn) Close() error {
	c.timer.Stop()
	return c.Conn.Close()
}
