package sandbox

import "sync"

// Capture is an io.Writer that keeps the first limit bytes written to it and
// discards the rest, while always reporting success: the producer (a stream
// copy from the sandbox) is drained and never failed, so the command runs to
// completion with its own exit code (C-EXEC-2); only a streamed exec's sink
// (NewExecCaptures) may hold it back. Its memory
// stays within limit whatever is written.
//
// It is safe for concurrent use: an adapter may read it while a straggler in
// the sandbox still writes (ExecEvidence). Use NewCapture; the zero value
// keeps nothing.
type Capture struct {
	mu        sync.Mutex
	limit     int
	buf       []byte
	truncated bool
	// sink, when set, is handed each kept piece as stream (NewExecCaptures).
	sink   OutputSink
	stream Stream
}

// NewCapture returns a Capture keeping the first limit bytes (MaxOutputBytes
// per exec stream). A negative limit keeps nothing, like 0.
func NewCapture(limit int) *Capture {
	return &Capture{limit: max(limit, 0)}
}

// Write keeps what fits under the limit and drops the rest, then hands the
// kept piece to the sink, outside the lock (a sink may block). It returns
// len(p), nil always.
func (c *Capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	offset := len(c.buf)
	keep := min(len(p), c.limit-offset)
	if keep < len(p) {
		c.truncated = true
	}
	if keep > 0 {
		c.grow(keep)
		c.buf = append(c.buf, p[:keep]...)
	}
	c.mu.Unlock()
	if keep > 0 && c.sink != nil {
		c.sink.Output(c.stream, int64(offset), p[:keep])
	}
	return len(p), nil
}

// grow makes room for n more bytes, doubling as append would but never past
// the limit, so the buffer's capacity is bounded by it too.
func (c *Capture) grow(n int) {
	if cap(c.buf)-len(c.buf) >= n {
		return
	}
	size := min(max(2*cap(c.buf), len(c.buf)+n, 512), c.limit)
	buf := make([]byte, len(c.buf), size)
	copy(buf, c.buf)
	c.buf = buf
}

// Bytes returns a copy of the bytes kept so far. A nil Capture has none.
func (c *Capture) Bytes() []byte {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]byte(nil), c.buf...)
}

// String returns the bytes kept so far as a string.
func (c *Capture) String() string {
	if c == nil {
		return ""
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return string(c.buf)
}

// Truncated reports whether any byte was discarded: more than the limit was
// written. Exactly limit bytes is not a truncation.
func (c *Capture) Truncated() bool {
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.truncated
}

// MaxOutputBytes is kept per stream (stdout, stderr) of one exec
// (CONTRACT §0).
const MaxOutputBytes = 1 << 20
