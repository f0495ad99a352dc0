package proxy

import (
	"net"
	"sync/atomic"
	"time"
)

// idleWatch closes a tunnel or an upgraded connection that has moved no
// byte either way for its timeout (Options.TunnelIdleTimeout), unless it is
// busy: an intercepted tunnel awaiting an origin's response head (a model
// may think for minutes) is waiting, not idle. It runs on a timer, not a
// goroutine, so an idle tunnel costs no stack; activity only stores a time.
type idleWatch struct {
	timeout time.Duration
	last    atomic.Int64 // unix nanoseconds of the last byte either way
	busy    atomic.Int32
	stopped atomic.Bool
	timer   *time.Timer
	close   func()
}

// watchIdle starts a watch that calls close once the connection has been
// idle for timeout; stop ends it.
func watchIdle(timeout time.Duration, close func()) *idleWatch {
	w := &idleWatch{timeout: timeout, close: close}
	w.touch()
	w.timer = time.AfterFunc(timeout, w.check)
	return w
}

// touch records activity.
func (w *idleWatch) touch() { w.last.Store(time.Now().UnixNano()) }

// check runs when the timer fires: it closes an idle connection, or
// re-arms for the rest of the timeout.
func (w *idleWatch) check() {
	if w.stopped.Load() {
		return
	}
	if w.busy.Load() > 0 {
		w.touch()
	}
	idle := time.Since(time.Unix(0, w.last.Load()))
	if idle >= w.timeout {
		w.close()
		return
	}
	w.timer.Reset(w.timeout - idle)
}

// begin and end bracket a wait that is not idleness.
func (w *idleWatch) begin() { w.busy.Add(1) }
func (w *idleWatch) end()   { w.touch(); w.busy.Add(-1) }

// stop ends the watch; the timer never closes anything after it.
func (w *idleWatch) stop() {
	w.stopped.Store(true)
	w.timer.Stop()
}

// idleConn records every read on a watch. A relay reads each direction
// from one side, so reads are all the activity there is. CloseWrite passes
// through for the relay's half-close.
type idleConn struct {
	net.Conn
	w *idleWatch
}

func (c idleConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.w.touch()
	}
	return n, err
}

func (c idleConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Close()
}
