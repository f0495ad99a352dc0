package telemetry

import (
	"context"
	"io"

	"go.opentelemetry.io/otel/attribute"

	"github.com/sandgate/sandgate/core/sandbox"
)

// The proc operations implement ports.ProcHost, one span each; a followed
// output's or a wait's span covers the whole read. Never a command, a tag
// or output in an attribute.

func (s *Sandbox) StartProc(ctx context.Context, req sandbox.ProcStart) (info sandbox.ProcInfo, err error) {
	s.op(ctx, "StartProc", func(ctx context.Context) error {
		info, err = s.next.StartProc(ctx, req)
		return err
	}, attribute.Bool("sandgate.proc.tty", req.TTY))
	return info, err
}

func (s *Sandbox) Procs(ctx context.Context) (list []sandbox.ProcInfo, err error) {
	s.op(ctx, "Procs", func(ctx context.Context) error {
		list, err = s.next.Procs(ctx)
		return err
	})
	return list, err
}

func (s *Sandbox) Proc(ctx context.Context, id string) (info sandbox.ProcInfo, err error) {
	s.op(ctx, "Proc", func(ctx context.Context) error {
		info, err = s.next.Proc(ctx, id)
		return err
	}, procID(id))
	return info, err
}

func (s *Sandbox) WaitProc(ctx context.Context, id string) (info sandbox.ProcInfo, err error) {
	s.op(ctx, "WaitProc", func(ctx context.Context) error {
		info, err = s.next.WaitProc(ctx, id)
		return err
	}, procID(id))
	return info, err
}

func (s *Sandbox) ProcOutput(ctx context.Context, id string, q sandbox.ProcOutputQuery, fn func(sandbox.ProcChunk) error) (info sandbox.ProcInfo, err error) {
	s.op(ctx, "ProcOutput", func(ctx context.Context) error {
		info, err = s.next.ProcOutput(ctx, id, q, fn)
		return err
	}, procID(id), attribute.Bool("sandgate.proc.follow", q.Follow))
	return info, err
}

func (s *Sandbox) ProcStdin(ctx context.Context, id string, src io.Reader, closeAfter bool) (err error) {
	s.op(ctx, "ProcStdin", func(ctx context.Context) error {
		err = s.next.ProcStdin(ctx, id, src, closeAfter)
		return err
	}, procID(id))
	return err
}

func (s *Sandbox) SignalProc(ctx context.Context, id, sig string) (err error) {
	s.op(ctx, "SignalProc", func(ctx context.Context) error {
		err = s.next.SignalProc(ctx, id, sig)
		return err
	}, procID(id), attribute.String("sandgate.proc.signal", sig))
	return err
}

func (s *Sandbox) ResizeProc(ctx context.Context, id string, cols, rows int) (err error) {
	s.op(ctx, "ResizeProc", func(ctx context.Context) error {
		err = s.next.ResizeProc(ctx, id, cols, rows)
		return err
	}, procID(id))
	return err
}

func (s *Sandbox) RemoveProc(ctx context.Context, id string) (err error) {
	s.op(ctx, "RemoveProc", func(ctx context.Context) error {
		err = s.next.RemoveProc(ctx, id)
		return err
	}, procID(id))
	return err
}

// procID is a proc's id as a span attribute (the agent's random id: not
// the caller's data).
func procID(id string) attribute.KeyValue { return attribute.String("sandgate.proc.id", id) }
