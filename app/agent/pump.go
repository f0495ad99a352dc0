package agent

import (
	"errors"
	"os"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// After the command's leader is reaped, its output is drained until EOF,
// or until a stream has been silent for drainIdle, or for drainMax in all:
// a straggler the command left in the background may hold stdout open for
// ever, and the call must not wait for it (exec_verdict.go).
const (
	drainIdle = 250 * time.Millisecond
	drainMax  = 1500 * time.Millisecond
)

// chunk is one read of a command's stream.
type chunk struct {
	stderr bool
	data   []byte
}

// pump reads one of a command's streams and delivers what it reads, until
// EOF or the drain's end. It then keeps reading and discarding until EOF,
// so a straggler that still writes to the stream never blocks on a full
// pipe nor dies of SIGPIPE: it keeps its stdout, as it does on the fallback
// path, and its output goes nowhere.
type pump struct {
	f      *os.File
	stderr bool
	// drainEnd is the drain's hard end (UnixNano), 0 until drain is called.
	drainEnd atomic.Int64
	// stopped is closed when the pump delivers no more.
	stopped chan struct{}
}

func newPump(f *os.File, stderr bool) *pump {
	return &pump{f: f, stderr: stderr, stopped: make(chan struct{})}
}

// run delivers chunks to out until EOF or the drain's end; quit closed means
// nobody receives any more.
func (p *pump) run(out chan<- chunk, quit <-chan struct{}) {
	defer func() { _ = p.f.Close() }()
	buf := make([]byte, 32<<10)
	delivering := true
	stop := func() {
		if delivering {
			delivering = false
			close(p.stopped)
		}
	}
	defer stop()
	for {
		n, err := p.f.Read(buf)
		if n > 0 && delivering {
			select {
			case out <- chunk{stderr: p.stderr, data: append([]byte(nil), buf[:n]...)}:
				p.extend()
			case <-quit:
				stop()
			}
		}
		switch {
		case err == nil:
		case errors.Is(err, os.ErrDeadlineExceeded):
			_ = p.f.SetReadDeadline(time.Time{})
			if delivering {
				p.sweep(buf, out, quit)
			}
			stop()
		default:
			return // EOF, or the pipe failed: nothing more will come
		}
		select {
		case <-quit:
			stop()
		default:
		}
	}
}

// sweepReads bounds sweep: what a full pipe can hold (1 MiB at most on
// Linux), not a straggler that keeps writing.
const sweepReads = 32

// sweep delivers, without waiting, what the pipe holds when the drain's
// deadline passes. The deadline measures silence by the clock, and a pump
// that was not scheduled for drainIdle (a loaded machine) would otherwise
// stop with bytes the command wrote before it ended still in the pipe:
// Go's poller answers an expired deadline before it tries the read.
func (p *pump) sweep(buf []byte, out chan<- chunk, quit <-chan struct{}) {
	rc, err := p.f.SyscallConn()
	if err != nil {
		return
	}
	for range sweepReads {
		n := 0
		if err := rc.Read(func(fd uintptr) bool {
			n, _ = unix.Read(int(fd), buf) // EAGAIN (empty) or EOF: n <= 0
			return true
		}); err != nil || n <= 0 {
			return
		}
		select {
		case out <- chunk{stderr: p.stderr, data: append([]byte(nil), buf[:n]...)}:
		case <-quit:
			return
		}
	}
}

// drain starts the drain: delivery ends at the first drainIdle of silence,
// and by end at the latest.
func (p *pump) drain(end time.Time) {
	p.drainEnd.Store(end.UnixNano())
	p.extend()
}

// extend renews the silence bound after a delivery during the drain.
func (p *pump) extend() {
	end := p.drainEnd.Load()
	if end == 0 {
		return
	}
	d := time.Now().Add(drainIdle)
	if hard := time.Unix(0, end); d.After(hard) {
		d = hard
	}
	_ = p.f.SetReadDeadline(d)
}
