package ports

import (
	"context"
	"io"

	"github.com/sandgate/sandgate/core/sandbox"
)

// ProcHost manages a sandbox's procs: commands the in-sandbox agent owns
// past the call that started them (background processes, interactive
// shells; core/sandbox's procs). A Sandbox is one; so is the Service's and
// the HTTP client's view of one session (Service.Procs), so the CLI drives
// the executor's procs through the very interface the executor drives the
// agent's. Every method answers sandbox.ErrNoAgent for a sandbox without
// the agent, sandbox.ErrInvalidProc for a malformed id or request (before
// anything is sent), sandbox.ErrProcNotFound for an unknown id, and
// ErrNotFound once the sandbox is gone.
type ProcHost interface {
	// StartProc starts a proc and returns it, running. Errors:
	// sandbox.ErrTooManyProcs (MaxRunningProcs are running).
	StartProc(ctx context.Context, req sandbox.ProcStart) (sandbox.ProcInfo, error)
	// Procs lists the procs, running and exited not yet removed, oldest
	// first.
	Procs(ctx context.Context) ([]sandbox.ProcInfo, error)
	// Proc describes one proc.
	Proc(ctx context.Context, id string) (sandbox.ProcInfo, error)
	// ProcOutput hands the proc's output to fn piece by piece from q.From
	// (pieces the ring no longer holds are counted in the first piece's
	// Dropped), following it live with q.Follow until the proc has exited
	// and its output is drained; it returns the proc as the read ended.
	// fn's error ends the call with it; a slow fn holds the read back,
	// never buffers it.
	ProcOutput(ctx context.Context, id string, q sandbox.ProcOutputQuery, fn func(sandbox.ProcChunk) error) (sandbox.ProcInfo, error)
	// ProcStdin streams src into the proc's stdin, then closes it when
	// closeAfter. Errors: sandbox.ErrStdinClosed.
	ProcStdin(ctx context.Context, id string, src io.Reader, closeAfter bool) error
	// SignalProc sends sig (one of sandbox.ProcSignals) to the proc's
	// process group. Errors: sandbox.ErrProcExited.
	SignalProc(ctx context.Context, id, sig string) error
	// ResizeProc resizes a PTY proc's terminal.
	ResizeProc(ctx context.Context, id string, cols, rows int) error
	// WaitProc blocks until the proc has exited and its output is drained,
	// and returns it.
	WaitProc(ctx context.Context, id string) (sandbox.ProcInfo, error)
	// RemoveProc kills the proc's group if it runs and forgets it.
	RemoveProc(ctx context.Context, id string) error
}
