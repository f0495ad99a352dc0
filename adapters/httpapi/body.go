package httpapi

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of the BodyGuard.
const (
	// DefaultBodyIdleTimeout is how long a request body may send nothing
	// before the request fails: a client that stalls gives its slot, its
	// goroutine and its descriptor back, and its session can be reaped.
	DefaultBodyIdleTimeout = 30 * time.Second
	// DefaultMaxBodies bounds the request bodies read at once.
	DefaultMaxBodies = 64
)

// Errors of a request body, each a 4xx or 503 with a stable code.
var (
	// ErrIncompleteBody: the body ended before its Content-Length (or its
	// chunked encoding) said it would; 400 "incomplete_body".
	ErrIncompleteBody = errors.New("the request body ended early")
	// ErrBodyTimeout: the body sent nothing for the idle timeout; 408
	// "request_timeout".
	ErrBodyTimeout = errors.New("the request body stalled")
	// ErrBusy: the server is reading as many bodies as it allows, or holds
	// as many batch bytes as its budget allows; 503 "busy", with
	// Retry-After. Retrying later is the answer.
	ErrBusy = errors.New("the server is busy")
)

// Codes of the body errors.
const (
	CodeIncompleteBody = "incomplete_body"
	CodeRequestTimeout = "request_timeout"
	CodeBusy           = "busy"
)

// BodyGuard bounds the request bodies of one server: how many are read at
// once, and how long one may stall. It is shared by every handler of a
// server (the API's and the gates'), so the cap is the process's.
//
// The stall bound is an idle deadline renewed before every read
// (http.ResponseController.SetReadDeadline), not a total timeout: an upload
// of 500 MB over a slow link that keeps sending is never cut.
type BodyGuard struct {
	idle  time.Duration
	slots chan struct{}
}

// NewBodyGuard returns a guard allowing max bodies at once (≤ 0: the
// default), each stalling at most idle (≤ 0: the default).
func NewBodyGuard(maxBodies int, idle time.Duration) *BodyGuard {
	if maxBodies <= 0 {
		maxBodies = DefaultMaxBodies
	}
	if idle <= 0 {
		idle = DefaultBodyIdleTimeout
	}
	return &BodyGuard{idle: idle, slots: make(chan struct{}, maxBodies)}
}

// Wrap guards h: a request with a body takes a slot, or is answered 503
// "busy" at once; its body fails with ErrBodyTimeout after the idle timeout
// without a byte. The slot is given back when the body is read to its end,
// fails or is closed, or when h returns, whichever comes first. Wrap
// outside authentication: a refused request's unread body is bounded too.
func (g *BodyGuard) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			h.ServeHTTP(w, r)
			return
		}
		select {
		case g.slots <- struct{}{}:
		default:
			// After the answer the server would read the unread body on,
			// with no deadline: one in the past makes it hang up instead.
			_ = http.NewResponseController(w).SetReadDeadline(time.Now())
			w.Header().Set("Retry-After", "1")
			writeError(w, http.StatusServiceUnavailable, CodeBusy, "too many request bodies in flight; retry later")
			return
		}
		b := &guardedBody{rc: r.Body, ctl: http.NewResponseController(w), idle: g.idle, release: g.release}
		defer b.abandon()
		// In place, not a copy: the muxes inside set the route on the
		// request the access log holds.
		r.Body = b
		h.ServeHTTP(w, r)
	})
}

func (g *BodyGuard) release() { <-g.slots }

// guardedBody is a request body under a BodyGuard.
type guardedBody struct {
	rc      io.ReadCloser
	ctl     *http.ResponseController
	idle    time.Duration
	release func()
	once    sync.Once
	// finished is set once the slot is given back: no read renews the
	// deadline after that.
	finished atomic.Bool
	// failed is the body's classified failure, for bodyFailure.
	failed atomic.Pointer[error]
}

func (b *guardedBody) Read(p []byte) (int, error) {
	if !b.finished.Load() {
		// ErrNotSupported (a writer that cannot set deadlines) leaves only
		// the server's own timeouts; the API's servers support it.
		_ = b.ctl.SetReadDeadline(time.Now().Add(b.idle))
	}
	n, err := b.rc.Read(p)
	switch {
	case errors.Is(err, io.EOF):
		// The server reads on in the background from here on, to notice a
		// client that goes away; a deadline left set would fire there
		// during a long exec and cancel its request.
		b.done(time.Time{})
	case err != nil:
		err = b.classify(err)
		// A deadline in the past: the server's discard of the rest fails at
		// once and it closes the connection after the answer.
		b.done(time.Now())
	}
	return n, err
}

// classify names a read failure and remembers it.
func (b *guardedBody) classify(err error) error {
	var c error
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		c = fmt.Errorf("%w: nothing received for %s", ErrBodyTimeout, b.idle)
	case errors.Is(err, io.ErrUnexpectedEOF):
		c = fmt.Errorf("%w: the body is shorter than its Content-Length, or its connection closed mid-body", ErrIncompleteBody)
	default:
		// A MaxBytesReader's error, or the connection's: not the client's
		// fault to classify here.
		return err
	}
	b.failed.CompareAndSwap(nil, &c)
	return c
}

// Close ends the body before its end.
func (b *guardedBody) Close() error {
	b.abandon()
	return b.rc.Close()
}

// abandon is done for a body not read to its end: after the handler, the
// server reads what is left of it (up to 256 KiB) before answering, and
// that read must stall no longer than any other.
func (b *guardedBody) abandon() {
	b.done(time.Now().Add(b.idle))
}

// done, once, gives the slot back and leaves deadline on the connection.
func (b *guardedBody) done(deadline time.Time) {
	b.once.Do(func() {
		b.finished.Store(true)
		_ = b.ctl.SetReadDeadline(deadline)
		b.release()
	})
}

// bodyFailure returns the classified failure of r's body, nil if it has
// none: a handler answers it rather than what the service made of the
// short read it was handed (a provider's write error would be 500).
func bodyFailure(r *http.Request) error {
	b, _ := r.Body.(*guardedBody)
	if b == nil {
		return nil
	}
	if p := b.failed.Load(); p != nil {
		return *p
	}
	return nil
}

// bodyError classifies an error from reading a body directly: a guarded
// body's failure is already named; an unguarded one's short read is named
// here.
func bodyError(err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: the body is shorter than its Content-Length", ErrIncompleteBody)
	}
	return err
}
