package httpapi

import (
	"errors"
	"fmt"
	"io"
	"sync"
)

// DefaultBatchBudget is the bytes every files:batch in flight may hold in
// memory together: four batches of DefaultMaxBatchBytes.
const DefaultBatchBudget = 4 * DefaultMaxBatchBytes

// memberChunk is the first allocation for a member's data, and the least
// it grows by: a header that claims gigabytes costs this much until bytes
// arrive.
const memberChunk = 32 << 10

// Budget is a count of bytes shared by the requests of one process: a
// batch takes what it allocates as its bytes arrive and gives it all back
// when it is done, so what a batch holds is bounded by what it received
// and what all batches hold by the budget. Safe for concurrent use.
type Budget struct {
	mu         sync.Mutex
	used, size int64
}

// NewBudget returns a budget of size bytes (≤ 0: DefaultBatchBudget).
func NewBudget(size int64) *Budget {
	if size <= 0 {
		size = DefaultBatchBudget
	}
	return &Budget{size: size}
}

// take reserves n bytes and reports whether they were free.
func (b *Budget) take(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.size {
		return false
	}
	b.used += n
	return true
}

func (b *Budget) give(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
}

// Used returns the bytes taken now.
func (b *Budget) Used() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// hold is one request's share of a Budget.
type hold struct {
	b    *Budget
	held int64
}

// release gives back everything the request took.
func (h *hold) release() {
	h.b.give(h.held)
	h.held = 0
}

// readMember reads exactly size bytes of r, allocating as they arrive (a
// chunk, then doubling) and taking each allocation from the budget first.
// A stream that ends early is io.ErrUnexpectedEOF; a full budget is ErrBusy.
func (h *hold) readMember(r io.Reader, size int64) ([]byte, error) {
	buf := []byte{}
	for int64(len(buf)) < size {
		if len(buf) == cap(buf) {
			grow := min(max(int64(cap(buf)), memberChunk), size-int64(len(buf)))
			if !h.b.take(grow) {
				return nil, fmt.Errorf("%w: the batches in flight hold %d bytes, the budget", ErrBusy, h.b.size)
			}
			h.held += grow
			next := make([]byte, len(buf), int64(cap(buf))+grow)
			copy(next, buf)
			// The old buffer is garbage now; it stays counted until the
			// request ends, so the budget errs on the safe side.
			buf = next
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		switch {
		case errors.Is(err, io.EOF) && int64(len(buf)) < size:
			return nil, io.ErrUnexpectedEOF
		case err != nil && !errors.Is(err, io.EOF):
			return nil, err
		}
	}
	return buf, nil
}
