package executor

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/ports"
)

// Procs is the session's procs (ports.ProcHost). Each call is a tracked
// call on the session's sandbox, as an exec is: the session is busy while
// one runs (a followed output or a wait holds it busy for as long), and a
// stale handle is retried once where nothing was consumed or delivered.
// Bad input is refused before any call: ids, requests, queries, sizes and
// signal names are checked here as the agent checks them.
func (s *Service) Procs(sid domain.ID) ports.ProcHost { return sessionProcs{s: s, sid: sid} }

type sessionProcs struct {
	s   *Service
	sid domain.ID
}

func (p sessionProcs) StartProc(ctx context.Context, req sandbox.ProcStart) (sandbox.ProcInfo, error) {
	if err := sandbox.ValidateProcStart(req); err != nil {
		return sandbox.ProcInfo{}, err
	}
	var info sandbox.ProcInfo
	err := p.s.call(ctx, p.sid, always, func(sb ports.Sandbox) (err error) {
		info, err = sb.StartProc(ctx, req)
		return err
	})
	return info, err
}

func (p sessionProcs) Procs(ctx context.Context) ([]sandbox.ProcInfo, error) {
	var list []sandbox.ProcInfo
	err := p.s.call(ctx, p.sid, always, func(sb ports.Sandbox) (err error) {
		list, err = sb.Procs(ctx)
		return err
	})
	return list, err
}

func (p sessionProcs) Proc(ctx context.Context, id string) (sandbox.ProcInfo, error) {
	return p.info(ctx, id, ports.ProcHost.Proc)
}

func (p sessionProcs) WaitProc(ctx context.Context, id string) (sandbox.ProcInfo, error) {
	return p.info(ctx, id, ports.ProcHost.WaitProc)
}

func (p sessionProcs) info(ctx context.Context, id string, op func(ports.ProcHost, context.Context, string) (sandbox.ProcInfo, error)) (sandbox.ProcInfo, error) {
	if err := sandbox.ValidateProcID(id); err != nil {
		return sandbox.ProcInfo{}, err
	}
	var info sandbox.ProcInfo
	err := p.s.call(ctx, p.sid, always, func(sb ports.Sandbox) (err error) {
		info, err = op(sb, ctx, id)
		return err
	})
	return info, err
}

func (p sessionProcs) ProcOutput(ctx context.Context, id string, q sandbox.ProcOutputQuery, fn func(sandbox.ProcChunk) error) (sandbox.ProcInfo, error) {
	if err := sandbox.ValidateProcID(id); err != nil {
		return sandbox.ProcInfo{}, err
	}
	if err := q.Validate(); err != nil {
		return sandbox.ProcInfo{}, err
	}
	delivered := false
	var info sandbox.ProcInfo
	// Retried only while nothing reached fn: a second read would hand it
	// the same pieces again.
	err := p.s.call(ctx, p.sid, func() bool { return !delivered }, func(sb ports.Sandbox) (err error) {
		info, err = sb.ProcOutput(ctx, id, q, func(c sandbox.ProcChunk) error {
			delivered = true
			return fn(c)
		})
		return err
	})
	return info, err
}

func (p sessionProcs) ProcStdin(ctx context.Context, id string, src io.Reader, closeAfter bool) error {
	if err := sandbox.ValidateProcID(id); err != nil {
		return err
	}
	counted := &countingReader{r: src}
	return p.s.call(ctx, p.sid, func() bool { return counted.n == 0 }, func(sb ports.Sandbox) error {
		return sb.ProcStdin(ctx, id, counted, closeAfter)
	})
}

func (p sessionProcs) SignalProc(ctx context.Context, id, sig string) error {
	if err := sandbox.ValidateProcSignal(sig); err != nil {
		return err
	}
	return p.act(ctx, id, func(sb ports.Sandbox) error { return sb.SignalProc(ctx, id, sig) })
}

func (p sessionProcs) ResizeProc(ctx context.Context, id string, cols, rows int) error {
	if err := sandbox.ValidateTermSize(cols, rows); err != nil {
		return err
	}
	return p.act(ctx, id, func(sb ports.Sandbox) error { return sb.ResizeProc(ctx, id, cols, rows) })
}

func (p sessionProcs) RemoveProc(ctx context.Context, id string) error {
	return p.act(ctx, id, func(sb ports.Sandbox) error { return sb.RemoveProc(ctx, id) })
}

func (p sessionProcs) act(ctx context.Context, id string, op func(ports.Sandbox) error) error {
	if err := sandbox.ValidateProcID(id); err != nil {
		return err
	}
	return p.s.call(ctx, p.sid, always, op)
}

// procsRunTimeout bounds the reaper's question to a sandbox's agent.
const procsRunTimeout = 5 * time.Second

// procsRunning reports whether the session's sandbox runs a proc: the
// reaper's test of an idle session. A sandbox without the agent (or one
// that cannot answer in time) has none to keep it.
func (s *Service) procsRunning(ctx context.Context, sid domain.ID) bool {
	ctx, cancel := context.WithTimeout(ctx, procsRunTimeout)
	defer cancel()
	var list []sandbox.ProcInfo
	err := s.withSandbox(ctx, sid, always, func(sb ports.Sandbox) (err error) {
		list, err = sb.Procs(ctx)
		return err
	})
	if err != nil {
		if !errors.Is(err, sandbox.ErrNoAgent) && !errors.Is(err, sandbox.ErrNotFound) {
			s.log.Warn("reaper: ask the sandbox for its procs", "session", sid, "error", err)
		}
		return false
	}
	for _, p := range list {
		if p.State == sandbox.ProcRunning {
			return true
		}
	}
	return false
}
