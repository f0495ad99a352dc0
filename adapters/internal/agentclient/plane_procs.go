package agentclient

import (
	"context"
	"io"

	"github.com/sandgate/sandgate/core/sandbox"
)

// ProcPlane is what a sandbox handle offers of procs, the commands the
// agent owns past the call that started them (procs.go). Only the agent
// has them: without one, every method is sandbox.ErrNoAgent.
type ProcPlane interface {
	StartProc(ctx context.Context, req sandbox.ProcStart) (sandbox.ProcInfo, error)
	Procs(ctx context.Context) ([]sandbox.ProcInfo, error)
	Proc(ctx context.Context, id string) (sandbox.ProcInfo, error)
	WaitProc(ctx context.Context, id string) (sandbox.ProcInfo, error)
	ProcOutput(ctx context.Context, id string, q sandbox.ProcOutputQuery, fn func(sandbox.ProcChunk) error) (sandbox.ProcInfo, error)
	ProcStdin(ctx context.Context, id string, src io.Reader, closeAfter bool) error
	SignalProc(ctx context.Context, id, sig string) error
	ResizeProc(ctx context.Context, id string, cols, rows int) error
	RemoveProc(ctx context.Context, id string) error
}

var (
	_ ProcPlane = Plane{}
	_ ProcPlane = (*Conn)(nil)
)

// routeProc runs op over the agent; without one it is ErrNoAgent.
func routeProc[T any](ctx context.Context, p Plane, op func(*Conn) (T, error)) (T, error) {
	return route(ctx, p, op, func() (T, error) {
		var zero T
		return zero, sandbox.ErrNoAgent
	})
}

func routeProcErr(ctx context.Context, p Plane, op func(*Conn) error) error {
	return routeErr(ctx, p, op, func() error { return sandbox.ErrNoAgent })
}

// StartProc starts a proc in req.Workdir, or the sandbox's workdir.
func (p Plane) StartProc(ctx context.Context, req sandbox.ProcStart) (sandbox.ProcInfo, error) {
	if req.Workdir == "" {
		req.Workdir = p.Workdir
	}
	return routeProc(ctx, p, func(c *Conn) (sandbox.ProcInfo, error) { return c.StartProc(ctx, req) })
}

// Procs lists the procs.
func (p Plane) Procs(ctx context.Context) ([]sandbox.ProcInfo, error) {
	return routeProc(ctx, p, func(c *Conn) ([]sandbox.ProcInfo, error) { return c.Procs(ctx) })
}

// Proc returns the proc id.
func (p Plane) Proc(ctx context.Context, id string) (sandbox.ProcInfo, error) {
	return routeProc(ctx, p, func(c *Conn) (sandbox.ProcInfo, error) { return c.Proc(ctx, id) })
}

// WaitProc waits for the proc id.
func (p Plane) WaitProc(ctx context.Context, id string) (sandbox.ProcInfo, error) {
	return routeProc(ctx, p, func(c *Conn) (sandbox.ProcInfo, error) { return c.WaitProc(ctx, id) })
}

// ProcOutput reads the proc's output (Conn.ProcOutput).
func (p Plane) ProcOutput(ctx context.Context, id string, q sandbox.ProcOutputQuery, fn func(sandbox.ProcChunk) error) (sandbox.ProcInfo, error) {
	return routeProc(ctx, p, func(c *Conn) (sandbox.ProcInfo, error) { return c.ProcOutput(ctx, id, q, fn) })
}

// ProcStdin streams src into the proc's stdin (Conn.ProcStdin).
func (p Plane) ProcStdin(ctx context.Context, id string, src io.Reader, closeAfter bool) error {
	return routeProcErr(ctx, p, func(c *Conn) error { return c.ProcStdin(ctx, id, src, closeAfter) })
}

// SignalProc signals the proc's group.
func (p Plane) SignalProc(ctx context.Context, id, sig string) error {
	return routeProcErr(ctx, p, func(c *Conn) error { return c.SignalProc(ctx, id, sig) })
}

// ResizeProc resizes a PTY proc's terminal.
func (p Plane) ResizeProc(ctx context.Context, id string, cols, rows int) error {
	return routeProcErr(ctx, p, func(c *Conn) error { return c.ResizeProc(ctx, id, cols, rows) })
}

// RemoveProc kills the proc if it runs and forgets it.
func (p Plane) RemoveProc(ctx context.Context, id string) error {
	return routeProcErr(ctx, p, func(c *Conn) error { return c.RemoveProc(ctx, id) })
}
