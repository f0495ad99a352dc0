package agent

import "sync"

// ring keeps the last size bytes of one of a proc's streams, addressed by
// stream offset (the count of bytes written before), so that any number of
// readers, each holding its own offset, read it without ever holding the
// writer back: a reader that falls behind finds its bytes overwritten and
// is told how many it lost. Its memory grows with what was written, up to
// size, never with the readers.
type ring struct {
	mu   sync.Mutex
	size int
	buf  []byte // grows to size, then wraps
	end  int64  // offset of the next byte written
	// changed is closed and replaced on every write: a reader with nothing
	// to read waits on it.
	changed chan struct{}
}

func newRing(size int) *ring { return &ring{size: size, changed: make(chan struct{})} }

// write appends p, overwriting the oldest bytes past size. Until the ring
// is full, buf holds every byte at its offset (end == len(buf)); from then
// on, offset i is at i % size.
func (r *ring) write(p []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	defer r.notify()
	if len(r.buf) < r.size && r.end+int64(len(p)) <= int64(r.size) {
		r.buf = append(r.buf, p...)
		r.end += int64(len(p))
		return
	}
	if len(r.buf) < r.size {
		full := make([]byte, r.size)
		copy(full, r.buf)
		r.buf = full
	}
	if len(p) > r.size { // only the tail can be kept
		r.end += int64(len(p) - r.size)
		p = p[len(p)-r.size:]
	}
	for len(p) > 0 {
		n := copy(r.buf[r.end%int64(r.size):], p)
		r.end += int64(n)
		p = p[n:]
	}
}

func (r *ring) notify() {
	close(r.changed)
	r.changed = make(chan struct{})
}

// span is what a read found: data at offset, and the bytes before it that
// the ring no longer held.
type span struct {
	data    []byte
	offset  int64
	dropped int64
}

// read copies at most limit bytes from offset from (or from the oldest byte
// kept, when from is older), and the channel closed at the next write.
func (r *ring) read(from int64, limit int) (s span, changed <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	start := r.end - int64(len(r.buf))
	if from < start {
		s.dropped = start - from
		from = start
	}
	s.offset = from
	if from < r.end {
		n := int(min(r.end-from, int64(limit)))
		s.data = make([]byte, n)
		at := int(from % int64(r.size))
		k := copy(s.data, r.buf[at:])
		copy(s.data[k:], r.buf[:n-k])
	}
	return s, r.changed
}

// total is the count of bytes written.
func (r *ring) total() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.end
}
