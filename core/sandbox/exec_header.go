package sandbox

import (
	"io"
	"strconv"
	"sync"
)

// headerMaxDigits is the length of the largest pid (maxPid).
const headerMaxDigits = 7

// headerMax is the longest header line: prefix, digits, newline.
const headerMax = len(HeaderPrefix) + headerMaxDigits + 1

// headerState is how far a HeaderStripper got.
type headerState int

const (
	headerPending headerState = iota // fewer bytes than a decision needs
	headerFound                      // the header was read and dropped
	headerAbsent                     // the stream does not start with one
)

// HeaderStripper is an io.Writer in front of an exec's stderr sink (a
// Capture): it drops the header line `sandgate-exec:<pid>\n` that the
// wrapper (shell.ExecWrapper) writes before the command exists, records the
// pid, and passes everything after it on verbatim — however the stream is
// split across writes. Only the very first line can be the header: a
// command that prints a fake one later has it passed on like any other
// output. A stream that
// does not start with a well-formed header (the wrapper could not run) is
// passed on whole, and Pid reports none.
//
// At most one header's worth of bytes is held back; call Flush when the
// stream ends to pass on a partial one. It is safe for concurrent use, so
// the adapter's deadline timer may ask for the Pid while the copy writes.
type HeaderStripper struct {
	mu      sync.Mutex
	next    io.Writer
	held    []byte
	state   headerState
	pid     int
	decided chan struct{}
}

// NewHeaderStripper returns a HeaderStripper writing to next.
func NewHeaderStripper(next io.Writer) *HeaderStripper {
	return &HeaderStripper{next: next, decided: make(chan struct{})}
}

// Decided is closed once the stripper knows whether the stream had a header:
// it read one, saw that the stream has none, or was flushed. The daemon can
// report the wrapper gone before the adapter has read its header, so an
// adapter that needs the Pid (NeedsGroupCheck, enforcement) waits for this
// first; the header is the stream's first line, written before the command
// ran, so it does not wait long.
func (h *HeaderStripper) Decided() <-chan struct{} { return h.decided }

// decide records the outcome and releases Decided's waiters. Callers hold mu.
func (h *HeaderStripper) decide(state headerState, pid int) {
	h.state, h.pid = state, pid
	close(h.decided)
}

// Write consumes p. It reports len(p) unless next fails; then it returns
// next's error and counts the bytes of p that were dropped as the header or
// taken by next.
func (h *HeaderStripper) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.state != headerPending {
		return h.next.Write(p)
	}
	prior := len(h.held)
	take := min(len(p), headerMax-prior)
	h.held = append(h.held, p[:take]...)
	state, n, pid := parseHeader(h.held)
	if state == headerPending {
		return len(p), nil
	}
	h.decide(state, pid)
	// Once per stream: the held bytes after the header and the rest of p go
	// on in one write.
	out := append(h.held[n:], p[take:]...)
	h.held = nil
	if len(out) == 0 {
		return len(p), nil
	}
	m, err := h.next.Write(out)
	if err != nil {
		return min(max(n+m-prior, 0), len(p)), err
	}
	return len(p), nil
}

// Flush passes on bytes held back for a header that never completed; call it
// at the end of the stream. Later writes pass straight through.
func (h *HeaderStripper) Flush() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.state != headerPending {
		return nil
	}
	h.decide(headerAbsent, 0)
	held := h.held
	h.held = nil
	if len(held) == 0 {
		return nil
	}
	_, err := h.next.Write(held)
	return err
}

// Pid returns the wrapper's pid — the process group to kill or probe — and
// whether the header has been read.
func (h *HeaderStripper) Pid() (int, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.pid, h.state == headerFound
}

// parseHeader decides whether b starts with a header: headerFound with the
// header's length and pid, headerAbsent, or headerPending while b is a
// proper prefix of one.
func parseHeader(b []byte) (state headerState, n, pid int) {
	p := len(HeaderPrefix)
	if len(b) < p {
		if string(b) != HeaderPrefix[:len(b)] {
			return headerAbsent, 0, 0
		}
		return headerPending, 0, 0
	}
	if string(b[:p]) != HeaderPrefix {
		return headerAbsent, 0, 0
	}
	i := p
	for i < len(b) && i-p < headerMaxDigits && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	if i == len(b) {
		return headerPending, 0, 0
	}
	if b[i] != '\n' || i == p {
		return headerAbsent, 0, 0
	}
	pid, err := strconv.Atoi(string(b[p:i]))
	if err != nil || pid < 2 || pid > maxPid {
		return headerAbsent, 0, 0
	}
	return headerFound, i + 1, pid
}
