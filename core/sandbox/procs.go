package sandbox

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// A proc is a command the in-sandbox agent owns: started detached from the
// call that started it, its output kept in a bounded ring per stream that
// any later call reads from an offset, its stdin open for later writes,
// signalled, waited for and removed by id.

// The sentinels of the proc operations.
var (
	// ErrProcNotFound: no proc has the id (never started, removed, or
	// evicted as the oldest exited one).
	ErrProcNotFound = errors.New("proc not found")
	// ErrTooManyProcs: MaxRunningProcs procs are running; one must end or
	// be removed before another starts.
	ErrTooManyProcs = errors.New("too many procs")
	// ErrProcExited: the proc's leader has exited, so a signal has no group
	// to go to (its pid may belong to another process by now).
	ErrProcExited = errors.New("proc exited")
	// ErrStdinClosed: the proc's stdin was closed by an earlier call, or
	// nothing reads it any more (the proc and every holder of it ended).
	ErrStdinClosed = errors.New("proc stdin closed")
	// ErrInvalidProc: a bad proc request or parameter (a ring size, a
	// terminal size, a tag, a signal name); its message says which.
	ErrInvalidProc = errors.New("invalid proc request")
)

// The bounds of a proc.
const (
	// DefaultRingBytes is each stream's ring when the request says 0.
	DefaultRingBytes = 1 << 20
	// MaxRingBytes bounds each stream's ring.
	MaxRingBytes = 16 << 20
	// MaxProcTagBytes bounds a proc's tag, the caller's label.
	MaxProcTagBytes = 128
	// MaxRunningProcs procs run at once per sandbox; the next start is
	// ErrTooManyProcs.
	MaxRunningProcs = 64
	// MaxExitedProcs exited procs are kept per sandbox until removed; the
	// next exit evicts the oldest.
	MaxExitedProcs = 256
	// MaxTermSize bounds a PTY's columns and rows (each 1..MaxTermSize).
	MaxTermSize = 1000
	// DefaultCols and DefaultRows are a PTY's size when the request says 0.
	DefaultCols, DefaultRows = 80, 24
)

// ProcStart asks the agent to start a proc: `/bin/bash -c Command` in
// Workdir (empty: the agent's own) with the agent's environment, in a
// process group of its own.
type ProcStart struct {
	Command string
	Workdir string
	// TTY runs the proc on a pseudo-terminal of Cols × Rows (0: the
	// defaults): stdin and one output stream, "stdout".
	TTY        bool
	Cols, Rows int
	// RingBytes is each stream's ring (0: DefaultRingBytes).
	RingBytes int64
	// Tag is the caller's label, returned with the proc.
	Tag string
}

// ProcState is a proc's state.
type ProcState string

// The proc states.
const (
	ProcRunning ProcState = "running"
	ProcExited  ProcState = "exited"
)

// ProcInfo describes a proc.
type ProcInfo struct {
	ID      string
	Pid     int
	TTY     bool
	Tag     string
	Command string
	State   ProcState
	// ExitCode is the exit status, or 128+N for a death by signal N
	// (Signaled); 0 while running.
	ExitCode  int
	Signaled  bool
	StartedAt time.Time
	// EndedAt is zero while running.
	EndedAt time.Time
	// StdoutBytes and StderrBytes are the bytes each stream produced in
	// all: the offset the next byte will have.
	StdoutBytes, StderrBytes int64
}

// The stream names of a proc's output.
const (
	StreamStdout = "stdout"
	StreamStderr = "stderr"
)

// ProcChunk is a piece of a proc's output.
type ProcChunk struct {
	// Stream is StreamStdout or StreamStderr.
	Stream string
	// Offset is the stream offset of Data's first byte.
	Offset int64
	Data   []byte
	// Dropped is how many bytes before Offset the ring no longer held for
	// this reader (overwritten before it read them).
	Dropped int64
}

// ProcOutputQuery selects what a read of a proc's output returns.
type ProcOutputQuery struct {
	// Stream is StreamStdout or StreamStderr; empty: both, interleaved as
	// they were produced.
	Stream string
	// From is the first offset wanted of each stream read.
	From int64
	// Follow streams live until the proc has exited and its output is
	// drained (or it is removed); without it, the read returns what the
	// rings hold now.
	Follow bool
}

// Validate checks the query.
func (q ProcOutputQuery) Validate() error {
	if q.Stream != "" && q.Stream != StreamStdout && q.Stream != StreamStderr {
		return fmt.Errorf("proc output stream %q: not stdout or stderr: %w", q.Stream, ErrInvalidProc)
	}
	if q.From < 0 {
		return fmt.Errorf("proc output from %d: negative: %w", q.From, ErrInvalidProc)
	}
	return nil
}

// ProcSignals are the signals a proc may be sent, by name.
var ProcSignals = []string{"TERM", "KILL", "INT", "HUP", "QUIT", "USR1", "USR2", "STOP", "CONT", "WINCH"}

// ValidateProcStart checks a ProcStart as the agent checks it, so a caller
// fails before a byte travels.
func ValidateProcStart(req ProcStart) error {
	if err := ValidateExec(ExecRequest{Command: req.Command}); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidProc, err)
	}
	switch {
	case req.RingBytes < 0 || req.RingBytes > MaxRingBytes:
		return fmt.Errorf("proc ring_bytes %d: outside 0..%d: %w", req.RingBytes, MaxRingBytes, ErrInvalidProc)
	case len(req.Tag) > MaxProcTagBytes:
		return fmt.Errorf("proc tag: %d bytes, more than %d: %w", len(req.Tag), MaxProcTagBytes, ErrInvalidProc)
	case strings.IndexByte(req.Workdir, 0) >= 0:
		return fmt.Errorf("proc workdir: NUL byte: %w", ErrInvalidProc)
	case !req.TTY && (req.Cols != 0 || req.Rows != 0):
		return fmt.Errorf("proc cols and rows: only with tty: %w", ErrInvalidProc)
	case req.Cols != 0 || req.Rows != 0:
		return ValidateTermSize(req.Cols, req.Rows)
	}
	return nil
}

// ValidateTermSize checks a PTY's size: each 1..MaxTermSize.
func ValidateTermSize(cols, rows int) error {
	if cols < 1 || cols > MaxTermSize || rows < 1 || rows > MaxTermSize {
		return fmt.Errorf("terminal size %dx%d: each must be 1..%d: %w", cols, rows, MaxTermSize, ErrInvalidProc)
	}
	return nil
}

// ValidateProcSignal checks a signal name against ProcSignals.
func ValidateProcSignal(name string) error {
	if slices.Contains(ProcSignals, name) {
		return nil
	}
	return fmt.Errorf("signal %q: not one of %v: %w", name, ProcSignals, ErrInvalidProc)
}

// ValidateProcID checks a proc id's shape (the agent makes them: 1..32 of
// [a-z0-9]), so a malformed one is refused apart from an unknown one.
func ValidateProcID(id string) error {
	if id == "" || len(id) > 32 {
		return fmt.Errorf("proc id %q: must be 1..32 characters: %w", id, ErrInvalidProc)
	}
	for i := range len(id) {
		if c := id[i]; (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return fmt.Errorf("proc id %q: only a-z and 0-9: %w", id, ErrInvalidProc)
		}
	}
	return nil
}
