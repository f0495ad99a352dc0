package proxy

import (
	"errors"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// maxHeldBytes bounds what a tunnel holds back before writing it anyway.
const maxHeldBytes = 64 << 10

// maxHeadBytes bounds what a client sends into an intercepted tunnel while
// no request is being answered: the TLS handshake and each request head.
// goproxy reads inner requests without a limit, so an endless header line
// would otherwise grow without bound. It counts the connection's bytes
// (TLS records included), so the plaintext head it allows is a little less
// than net/http's default limit.
const maxHeadBytes = http.DefaultMaxHeaderBytes

var errHeadTooLarge = errors.New("request head too large")

// tunnelConn is an intercepted tunnel's client connection, under goproxy's
// TLS. It counts the client's bytes, ends the tunnel on its first Close,
// and can hold writes back while a response body streams: goproxy writes a
// chunked body as three TLS records per chunk (size line, data, CRLF),
// each its own write(2), and holding them until the body is read again
// sends them in one. The body flushes before each upstream read (hold),
// so nothing waits for the upstream: SSE and chunked responses flow as
// before.
type tunnelConn struct {
	net.Conn
	x    *exchange
	once sync.Once
	done func()
	idle *idleWatch

	// answering is set while a request is answered (its body and the
	// response may be of any size); head counts the bytes read otherwise,
	// since the last answer ended.
	answering atomic.Bool
	head      atomic.Int64

	wmu     sync.Mutex
	holding bool
	held    []byte
}

func (c *tunnelConn) Read(b []byte) (int, error) {
	// The client may wait for what is held before it sends more.
	if err := c.flush(false); err != nil {
		return 0, err
	}
	n, err := c.Conn.Read(b)
	c.x.sent.Add(int64(n))
	if n > 0 {
		c.idle.touch()
	}
	if !c.answering.Load() && c.head.Add(int64(n)) > maxHeadBytes {
		_ = c.Close()
		return 0, errHeadTooLarge
	}
	return n, err
}

// requestRead marks a request head as read: the bytes that follow (its
// body) are not counted, and the set-up deadline (Hijack) is lifted.
func (c *tunnelConn) requestRead() {
	c.answering.Store(true)
	_ = c.SetReadDeadline(time.Time{})
}

// answered marks the end of an answer: the next request head is counted
// from zero.
func (c *tunnelConn) answered() {
	c.head.Store(0)
	c.answering.Store(false)
}

func (c *tunnelConn) Write(b []byte) (int, error) {
	c.idle.touch()
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.holding {
		c.held = append(c.held, b...)
		if len(c.held) >= maxHeldBytes {
			return len(b), c.flushLocked()
		}
		return len(b), nil
	}
	if err := c.flushLocked(); err != nil {
		return 0, err
	}
	return c.write(b)
}

// hold writes what is held and holds the writes that follow, until the
// next hold or flush. A response body calls it before each upstream read.
func (c *tunnelConn) hold() error { return c.flush(true) }

// flush writes what is held; holding says whether later writes are held.
// When they are not, the buffer goes too: an idle tunnel keeps none.
func (c *tunnelConn) flush(holding bool) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.holding = holding
	err := c.flushLocked()
	if !holding {
		c.held = nil
	}
	return err
}

func (c *tunnelConn) flushLocked() error {
	if len(c.held) == 0 {
		return nil
	}
	_, err := c.write(c.held)
	c.held = c.held[:0]
	return err
}

func (c *tunnelConn) write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.x.recv.Add(int64(n))
	return n, err
}

// Close writes what is held, unless a write is under way (Revoke and
// Shutdown close a tunnel from another goroutine, and must not wait for a
// client that does not read), then closes.
func (c *tunnelConn) Close() error {
	if c.wmu.TryLock() {
		_ = c.flushLocked()
		c.holding = false
		c.wmu.Unlock()
	}
	err := c.Conn.Close()
	c.once.Do(c.done)
	return err
}
