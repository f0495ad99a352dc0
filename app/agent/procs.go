package agent

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/sandgate/sandgate/core/agentwire"
	"github.com/sandgate/sandgate/core/sandbox"
)

// Procs are commands the agent owns past the call that started them
// (agentwire's PathProcs routes). Each runs `/bin/bash -c` in a process
// group of its own (a session of its own on a PTY), started at once: unlike
// an exec, no call waits for its pid before it runs, so it needs no hold.
// Its output goes into a bounded ring per stream that readers read from
// their own offsets; its stdin stays open for later writes until closed.

// removeWait bounds how long a removal waits for a killed proc's leader to
// be reaped before it frees the proc anyway.
const removeWait = 5 * time.Second

// Procs is a set of procs, in the order they started: a Server's own, or
// one that several Servers share (Options.Procs) so that procs outlive the
// stream of the Server that started them.
type Procs struct {
	mu    sync.Mutex
	byID  map[string]*proc
	order []*proc
}

// NewProcs returns an empty set of procs.
func NewProcs() *Procs { return &Procs{byID: map[string]*proc{}} }

// KillAll SIGKILLs the group of every proc still running.
func (t *Procs) KillAll() {
	for _, p := range t.list() {
		if !closed(p.exited) {
			killGroup(p.pid)
		}
	}
}

// proc is one command the agent owns.
type proc struct {
	id, tag, command string
	tty              bool
	pid              int
	cmd              *exec.Cmd
	started          time.Time
	// stdin is the write end of the proc's stdin pipe, or its PTY's
	// master (which is then also outs[0]'s file). stdinMu serialises the
	// writers and guards stdinClosed.
	stdin       *os.File
	stdinMu     sync.Mutex
	stdinClosed bool
	files       []*os.File // what the pumps read: stdout, stderr; the master alone on a PTY
	outs        [2]*ring   // stdout, stderr (never written on a PTY)
	pumped      [2]chan struct{}
	// exited is closed once the leader is reaped (the fields under mu set);
	// drained once its output is drained after that; removed at removal.
	exited, drained, removed chan struct{}
	freeOnce                 sync.Once

	mu       sync.Mutex
	ended    time.Time
	exitCode int
	signaled bool
}

// startProc validates req, then starts and registers the proc.
func (s *Server) startProc(req agentwire.ProcStart) (*proc, error) {
	spec := sandbox.ProcStart{Command: req.Command, Workdir: req.Workdir, TTY: req.TTY, Cols: req.Cols,
		Rows: req.Rows, RingBytes: req.RingBytes, Tag: req.Tag}
	if err := sandbox.ValidateProcStart(spec); err != nil {
		return nil, fmt.Errorf("%w: %w", errInvalid, err)
	}
	if reason := enterError(req.Workdir); reason != "" {
		return nil, fmt.Errorf("proc workdir %q: %s: %w", req.Workdir, reason, errInvalid)
	}
	t := s.procs
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.running() >= sandbox.MaxRunningProcs {
		return nil, fmt.Errorf("%d procs running: %w", sandbox.MaxRunningProcs, sandbox.ErrTooManyProcs)
	}
	p, err := launch(spec)
	if err != nil {
		return nil, err
	}
	for t.byID[p.id] != nil || p.id == "" {
		p.id = newProcID()
	}
	t.byID[p.id] = p
	t.order = append(t.order, p)
	go t.reap(p)
	return p, nil
}

// running counts the procs not exited; t.mu is held.
func (t *Procs) running() int {
	n := 0
	for _, p := range t.order {
		if !closed(p.exited) {
			n++
		}
	}
	return n
}

func newProcID() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// launch starts the command on pipes or a PTY and its pumps.
func launch(spec sandbox.ProcStart) (*proc, error) {
	size := int(spec.RingBytes)
	if size == 0 {
		size = sandbox.DefaultRingBytes
	}
	p := &proc{tag: spec.Tag, command: spec.Command, tty: spec.TTY, outs: [2]*ring{newRing(size), newRing(size)},
		pumped: [2]chan struct{}{make(chan struct{}), make(chan struct{})},
		exited: make(chan struct{}), drained: make(chan struct{}), removed: make(chan struct{})}
	cmd := exec.Command("/bin/bash", "-c", spec.Command)
	cmd.Dir = spec.Workdir
	var child []*os.File // the child's ends, closed here once it has them
	var err error
	if spec.TTY {
		child, err = p.onPTY(cmd, spec)
	} else {
		child, err = p.onPipes(cmd)
	}
	if err == nil {
		p.started = time.Now()
		err = cmd.Start()
	}
	for _, f := range child {
		_ = f.Close()
	}
	if err != nil {
		p.closeFiles()
		return nil, fmt.Errorf("proc: start /bin/bash: %w", err)
	}
	p.pid = cmd.Process.Pid
	p.cmd = cmd
	for i := range p.outs {
		if i < len(p.files) {
			go p.pump(i)
		} else {
			close(p.pumped[i])
		}
	}
	return p, nil
}

// onPipes gives cmd a stdin pipe and an output pipe per stream, in a
// process group of its own; it returns the child's ends.
func (p *proc) onPipes(cmd *exec.Cmd) ([]*os.File, error) {
	var child []*os.File
	fail := func(err error) ([]*os.File, error) {
		for _, f := range child {
			_ = f.Close()
		}
		return nil, fmt.Errorf("proc: pipe: %w", err)
	}
	in, stdin, err := os.Pipe()
	if err != nil {
		return fail(err)
	}
	child, p.stdin = append(child, in), stdin
	for range 2 {
		rd, wr, err := os.Pipe()
		if err != nil {
			return fail(err)
		}
		child, p.files = append(child, wr), append(p.files, rd)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = in, child[1], child[2]
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return child, nil
}

// onPTY gives cmd a new PTY as its controlling terminal, stdin, stdout and
// stderr, in a session (so a group) of its own; it returns the child's end.
// TERM is the agent's, or xterm-256color when it has none.
func (p *proc) onPTY(cmd *exec.Cmd, spec sandbox.ProcStart) ([]*os.File, error) {
	cols, rows := spec.Cols, spec.Rows
	if cols == 0 {
		cols, rows = sandbox.DefaultCols, sandbox.DefaultRows
	}
	master, tty, err := openPTY(cols, rows)
	if err != nil {
		return nil, fmt.Errorf("proc: pty: %w", err)
	}
	p.stdin, p.files = master, []*os.File{master}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if os.Getenv("TERM") == "" {
		cmd.Env = append(os.Environ(), "TERM=xterm-256color")
	}
	return []*os.File{tty}, nil
}

// pump copies stream i into its ring until EOF (a PTY's master reads EIO
// once no process holds the terminal), or until the proc is freed.
func (p *proc) pump(i int) {
	defer close(p.pumped[i])
	buf := make([]byte, 32<<10)
	for {
		n, err := p.files[i].Read(buf)
		if n > 0 {
			p.outs[i].write(buf[:n])
		}
		if err != nil {
			return
		}
	}
}

// reap waits for the proc's leader, records how it ended, and marks its
// output drained once both streams ended, or drainMax after the exit at
// the latest: a straggler that keeps a stream open is not waited for (its
// output still goes into the ring).
func (t *Procs) reap(p *proc) {
	_ = p.cmd.Wait()
	st := p.cmd.ProcessState
	p.mu.Lock()
	p.ended = time.Now()
	p.exitCode = exitCode(st)
	ws, ok := st.Sys().(syscall.WaitStatus)
	p.signaled = ok && ws.Signaled()
	p.mu.Unlock()
	close(p.exited)
	t.evict()
	bound := time.NewTimer(drainMax)
	defer bound.Stop()
	for _, c := range p.pumped {
		select {
		case <-c:
		case <-bound.C:
		case <-p.removed:
		}
	}
	close(p.drained)
}

// evict frees the oldest exited procs past sandbox.MaxExitedProcs.
func (t *Procs) evict() {
	t.mu.Lock()
	var exited []*proc
	for _, p := range t.order {
		if closed(p.exited) {
			exited = append(exited, p)
		}
	}
	var gone []*proc
	if n := len(exited) - sandbox.MaxExitedProcs; n > 0 {
		gone = exited[:n]
		for _, p := range gone {
			t.drop(p)
		}
	}
	t.mu.Unlock()
	for _, p := range gone {
		p.free()
	}
}

// drop unregisters p; t.mu is held.
func (t *Procs) drop(p *proc) {
	delete(t.byID, p.id)
	for i, q := range t.order {
		if q == p {
			t.order = append(t.order[:i:i], t.order[i+1:]...)
			break
		}
	}
}

// get returns the proc with id.
func (t *Procs) get(id string) (*proc, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.byID[id]
	if p == nil {
		return nil, fmt.Errorf("proc %q: %w", id, sandbox.ErrProcNotFound)
	}
	return p, nil
}

// list returns the procs, oldest first.
func (t *Procs) list() []*proc {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]*proc(nil), t.order...)
}

// remove unregisters the proc with id, SIGKILLs its group if it runs,
// waits (bounded) for its leader to be reaped and frees it.
func (t *Procs) remove(id string) error {
	t.mu.Lock()
	p := t.byID[id]
	if p != nil {
		t.drop(p)
	}
	t.mu.Unlock()
	if p == nil {
		return fmt.Errorf("proc %q: %w", id, sandbox.ErrProcNotFound)
	}
	if !closed(p.exited) {
		killGroup(p.pid)
		select {
		case <-p.exited:
		case <-time.After(removeWait):
		}
	}
	p.free()
	return nil
}

// free ends what reads or writes the proc: its readers are told it is
// removed, its files closed (which ends its pumps and a stdin write in
// progress). A straggler that still writes to its stream gets EPIPE.
func (p *proc) free() {
	p.freeOnce.Do(func() {
		close(p.removed)
		p.closeFiles()
	})
}

func (p *proc) closeFiles() {
	if p.stdin != nil && !p.tty {
		_ = p.stdin.Close()
	}
	for _, f := range p.files {
		_ = f.Close()
	}
}

// info is the proc's ProcInfo now.
func (p *proc) info() agentwire.ProcInfo {
	in := agentwire.ProcInfo{ID: p.id, Pid: p.pid, TTY: p.tty, Tag: p.tag, Command: p.command,
		State: string(sandbox.ProcRunning), StartedAt: p.started.UTC(),
		StdoutBytes: p.outs[0].total(), StderrBytes: p.outs[1].total()}
	if closed(p.exited) {
		p.mu.Lock()
		ended := p.ended.UTC()
		in.State, in.ExitCode, in.Signaled, in.EndedAt = string(sandbox.ProcExited), p.exitCode, p.signaled, &ended
		p.mu.Unlock()
	}
	return in
}

// closed reports whether c is closed.
func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// Running is the number of procs not exited.
func (t *Procs) Running() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.running()
}
