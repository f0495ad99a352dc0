package cli

import (
	"fmt"
	"io"
	"strings"
)

// progressThreshold is the smallest transfer that gets a progress bar.
const progressThreshold = 4 << 20

// progress is a one-line progress bar on a terminal: an io.Writer counting
// the bytes that pass (a TeeReader or MultiWriter feeds it), redrawn
// whenever the whole percentage changes, so it draws at most 101 times
// whatever the chunk sizes.
type progress struct {
	w     io.Writer
	label string
	total int64
	done  int64
	pct   int
}

// newProgress returns a bar for a transfer of total bytes, or nil when none
// is drawn (a small transfer, or stderr is no terminal).
func newProgress(s *Streams, label string, total int64) *progress {
	if !s.StderrIsTerminal || total <= progressThreshold {
		return nil
	}
	p := &progress{w: s.Stderr, label: label, total: total, pct: -1}
	p.draw()
	return p
}

// Write counts len(b) bytes; it never fails, so it never breaks a transfer.
func (p *progress) Write(b []byte) (int, error) {
	p.done += int64(len(b))
	if pct := p.percent(); pct != p.pct {
		p.draw()
	}
	return len(b), nil
}

func (p *progress) percent() int {
	if p.done >= p.total {
		return 100
	}
	return int(p.done * 100 / p.total)
}

func (p *progress) draw() {
	const width = 30
	p.pct = p.percent()
	bar := strings.Repeat("=", p.pct*width/100) + strings.Repeat(" ", width-p.pct*width/100)
	_, _ = fmt.Fprintf(p.w, "\r%s [%s] %3d%% %s / %s", p.label, bar, p.pct, mib(p.done), mib(p.total))
}

// end finishes the bar's line.
func (p *progress) end() {
	if p != nil {
		_, _ = fmt.Fprintln(p.w)
	}
}

// reader returns r counted by p (r itself for no bar).
func (p *progress) reader(r io.Reader) io.Reader {
	if p == nil {
		return r
	}
	return io.TeeReader(r, p)
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
