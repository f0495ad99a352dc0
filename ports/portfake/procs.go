package portfake

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/ports"
)

// ProcTable is an in-memory ports.ProcHost: a proc's stdout starts with its
// command and a newline, every byte written to its stdin is echoed to its
// stdout (as `cat` would, or a terminal's echo), and it exits 0 when its
// stdin is closed, or 128+N when signalled with KILL, TERM, INT or HUP.
// Inputs are checked as the agent checks them. The zero value is ready.
type ProcTable struct {
	mu    sync.Mutex
	procs map[string]*fakeProc
	order []string
	next  int
	// changed is closed and replaced whenever a proc changes, waking the
	// readers that follow.
	changed chan struct{}
}

var _ ports.ProcHost = (*ProcTable)(nil)

type fakeProc struct {
	info   sandbox.ProcInfo
	stdout []byte
	closed bool
	size   [2]int
}

// Size is the terminal size of a PTY proc, as the last resize left it.
func (p *ProcTable) Size(id string) (cols, rows int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if f := p.procs[id]; f != nil {
		return f.size[0], f.size[1]
	}
	return 0, 0
}

func (p *ProcTable) changedLocked() {
	if p.changed != nil {
		close(p.changed)
	}
	p.changed = make(chan struct{})
}

// StartProc starts a fake proc.
func (p *ProcTable) StartProc(_ context.Context, req sandbox.ProcStart) (sandbox.ProcInfo, error) {
	if err := sandbox.ValidateProcStart(req); err != nil {
		return sandbox.ProcInfo{}, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.procs == nil {
		p.procs = map[string]*fakeProc{}
	}
	p.next++
	id := fmt.Sprintf("p%d", p.next)
	f := &fakeProc{stdout: []byte(req.Command + "\n"), size: [2]int{req.Cols, req.Rows}}
	f.info = sandbox.ProcInfo{ID: id, Pid: 100 + p.next, TTY: req.TTY, Tag: req.Tag, Command: req.Command,
		State: sandbox.ProcRunning, StartedAt: time.Unix(1700000000, 0).UTC()}
	p.procs[id] = f
	p.order = append(p.order, id)
	p.changedLocked()
	return f.snapshot(), nil
}

func (f *fakeProc) snapshot() sandbox.ProcInfo {
	info := f.info
	info.StdoutBytes = int64(len(f.stdout))
	return info
}

// Procs lists the procs, oldest first.
func (p *ProcTable) Procs(context.Context) ([]sandbox.ProcInfo, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	list := []sandbox.ProcInfo{}
	for _, id := range p.order {
		list = append(list, p.procs[id].snapshot())
	}
	return list, nil
}

func (p *ProcTable) get(id string) (*fakeProc, error) {
	if err := sandbox.ValidateProcID(id); err != nil {
		return nil, err
	}
	if f := p.procs[id]; f != nil {
		return f, nil
	}
	return nil, fmt.Errorf("proc %s: %w", id, sandbox.ErrProcNotFound)
}

// Proc describes one proc.
func (p *ProcTable) Proc(_ context.Context, id string) (sandbox.ProcInfo, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f, err := p.get(id)
	if err != nil {
		return sandbox.ProcInfo{}, err
	}
	return f.snapshot(), nil
}

// ProcOutput hands stdout from q.From (stderr is always empty), following
// it until the proc exits when asked.
func (p *ProcTable) ProcOutput(ctx context.Context, id string, q sandbox.ProcOutputQuery, fn func(sandbox.ProcChunk) error) (sandbox.ProcInfo, error) {
	if err := q.Validate(); err != nil {
		return sandbox.ProcInfo{}, err
	}
	at := q.From
	for {
		p.mu.Lock()
		f, err := p.get(id)
		if err != nil {
			p.mu.Unlock()
			return sandbox.ProcInfo{}, err
		}
		var piece []byte
		if q.Stream != sandbox.StreamStderr && at < int64(len(f.stdout)) {
			piece = append([]byte(nil), f.stdout[at:]...)
		}
		info, wait := f.snapshot(), p.changed
		p.mu.Unlock()
		if len(piece) > 0 {
			if err := fn(sandbox.ProcChunk{Stream: sandbox.StreamStdout, Offset: at, Data: piece}); err != nil {
				return sandbox.ProcInfo{}, err
			}
			at += int64(len(piece))
			continue
		}
		if !q.Follow || info.State == sandbox.ProcExited {
			return info, nil
		}
		select {
		case <-wait:
		case <-ctx.Done():
			return sandbox.ProcInfo{}, ctx.Err()
		}
	}
}

// ProcStdin echoes src to the proc's stdout as it arrives.
func (p *ProcTable) ProcStdin(ctx context.Context, id string, src io.Reader, closeAfter bool) error {
	buf := make([]byte, 32<<10)
	for {
		n, rerr := src.Read(buf)
		if err := p.feed(id, buf[:n], closeAfter && rerr == io.EOF); err != nil {
			return err
		}
		switch {
		case rerr == io.EOF:
			return nil
		case rerr != nil:
			return rerr
		case ctx.Err() != nil:
			return ctx.Err()
		}
	}
}

func (p *ProcTable) feed(id string, data []byte, closeAfter bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	f, err := p.get(id)
	switch {
	case err != nil:
		return err
	case f.closed:
		return fmt.Errorf("proc %s: %w", id, sandbox.ErrStdinClosed)
	}
	f.stdout = append(f.stdout, data...)
	if closeAfter {
		f.closed = true
		p.exitLocked(f, 0, false)
	}
	p.changedLocked()
	return nil
}

func (p *ProcTable) exitLocked(f *fakeProc, code int, signaled bool) {
	if f.info.State == sandbox.ProcExited {
		return
	}
	f.info.State, f.info.ExitCode, f.info.Signaled = sandbox.ProcExited, code, signaled
	f.info.EndedAt = f.info.StartedAt.Add(time.Second)
}

var fakeSignals = map[string]int{"HUP": 1, "INT": 2, "KILL": 9, "TERM": 15}

// SignalProc ends the proc for KILL, TERM, INT and HUP; other signals
// change nothing.
func (p *ProcTable) SignalProc(_ context.Context, id, sig string) error {
	if err := sandbox.ValidateProcSignal(sig); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	f, err := p.get(id)
	switch {
	case err != nil:
		return err
	case f.info.State == sandbox.ProcExited:
		return fmt.Errorf("proc %s: %w", id, sandbox.ErrProcExited)
	}
	if n, ok := fakeSignals[sig]; ok {
		p.exitLocked(f, 128+n, true)
		p.changedLocked()
	}
	return nil
}

// ResizeProc records a PTY proc's size (Size).
func (p *ProcTable) ResizeProc(_ context.Context, id string, cols, rows int) error {
	if err := sandbox.ValidateTermSize(cols, rows); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	f, err := p.get(id)
	switch {
	case err != nil:
		return err
	case !f.info.TTY:
		return fmt.Errorf("proc %s: not on a terminal: %w", id, sandbox.ErrInvalidProc)
	}
	f.size = [2]int{cols, rows}
	return nil
}

// WaitProc blocks until the proc exits.
func (p *ProcTable) WaitProc(ctx context.Context, id string) (sandbox.ProcInfo, error) {
	return p.ProcOutput(ctx, id, sandbox.ProcOutputQuery{Stream: sandbox.StreamStderr, Follow: true},
		func(sandbox.ProcChunk) error { return nil })
}

// RemoveProc forgets the proc (ending it first).
func (p *ProcTable) RemoveProc(_ context.Context, id string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	f, err := p.get(id)
	if err != nil {
		return err
	}
	p.exitLocked(f, 128+9, true)
	delete(p.procs, id)
	for i, o := range p.order {
		if o == id {
			p.order = append(p.order[:i], p.order[i+1:]...)
			break
		}
	}
	p.changedLocked()
	return nil
}
