package kubernetes

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/sandgate/sandgate/core/sandbox"
)

// Exec on the fallback path (C-EXEC-1..5). The command runs under the
// core's wrapper (the deadline) inside the relay (relay.go); the verdict
// comes from evidence the command cannot forge (B-6): this clock, the exit
// code the runtime reports when the exec's stream ends, and — when that code
// says the wrapper was killed — probes of its process group.
func (s scripts) Exec(ctx context.Context, req sandbox.ExecRequest) (sandbox.ExecResult, error) {
	if err := sandbox.ValidateExec(req); err != nil {
		return sandbox.ExecResult{}, err
	}
	deadline := sandbox.ExecDeadline(req.Timeout)
	stdout, stderr := sandbox.NewExecCaptures(req)
	hdr := sandbox.NewHeaderStripper(stderr)
	streamCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := &execWatch{s: s.handle, hdr: hdr, ev: sandbox.ExecEvidence{Deadline: deadline}, done: make(chan struct{})}
	w.start = time.Now() // before the exec starts, so a watchdog kill never looks early
	go func() {
		defer close(w.done)
		w.code, w.err = s.exec(streamCtx, relayArgv(sandbox.ExecArgv(req, s.workdir)), lifeline{streamCtx}, stdout, hdr)
	}()
	err := w.run(ctx)
	cancel()
	<-w.done
	_ = hdr.Flush()
	if err != nil {
		return sandbox.ExecResult{}, err
	}
	return sandbox.NewExecResult(stdout, stderr, w.ev), nil
}

// execWatch follows one exec until the command is finished, gathering the
// evidence the verdict needs.
type execWatch struct {
	s     *handle
	hdr   *sandbox.HeaderStripper
	start time.Time
	ev    sandbox.ExecEvidence
	done  chan struct{} // closed when the exec's stream ended; then code, err
	code  int
	err   error
}

// run waits for the stream to end and, when its exit code says the wrapper
// died of a signal under a deadline, for the wrapper's process group to
// empty. Under a deadline the whole wait is bounded by deadline +
// ReturnGrace (C-EXEC-3), and at deadline + EnforceGrace the group is
// killed from outside.
func (w *execWatch) run(ctx context.Context) error {
	if w.ev.Deadline == 0 {
		<-w.done
		if w.err != nil {
			return w.s.execErr(ctx, w.err)
		}
		w.ev.ExitCode = w.code
		return nil
	}
	bound, cancel := context.WithDeadline(ctx, w.start.Add(w.ev.Deadline+sandbox.ReturnGrace))
	defer cancel()
	enforce := time.NewTimer(time.Until(w.start.Add(w.ev.Deadline + sandbox.EnforceGrace)))
	defer enforce.Stop()
	select {
	case <-w.done:
	case <-enforce.C:
		w.enforceNow(ctx)
		select {
		case <-w.done:
		case <-bound.Done():
			return w.stopped(ctx, bound)
		}
	case <-bound.Done():
		return w.stopped(ctx, bound)
	}
	if w.err != nil {
		return w.s.execErr(ctx, w.err)
	}
	w.ev.ExitCode, w.ev.Finished = w.code, time.Since(w.start)
	if !sandbox.NeedsGroupCheck(w.code) {
		return nil
	}
	return w.waitGroup(ctx, bound, enforce.C)
}

// stopped ends a wait whose bound is done: the caller's cancellation is an
// error (cancelling the stream ends the wrapper's lifeline, and its watchdog
// kills the command's group — the same path as an executor that dies); the
// return bound passing is a verdict — TimedOut, killed, the group killed in
// the background.
func (w *execWatch) stopped(ctx, bound context.Context) error {
	if ctx.Err() != nil {
		return fmt.Errorf("kubernetes exec: %w", ctx.Err())
	}
	w.killGroup(ctx)
	w.ev.Enforced, w.ev.Finished = true, time.Since(w.start)
	if w.ev.ExitCode == 0 {
		w.ev.ExitCode = sandbox.ExitKilled
	}
	return nil
}

// waitGroup follows a wrapper that died of a signal: the command may have
// killed it (or the relay) and still run in its group. Finished becomes the
// moment the group is first seen empty. The probe is an exec of the
// sandbox's own bash — the weaker evidence core/sandbox documents.
func (w *execWatch) waitGroup(ctx, bound context.Context, enforce <-chan time.Time) error {
	pid, ok := w.groupPid()
	if !ok {
		return nil // no header: the wrapper never ran, there is no group
	}
	argv, err := sandbox.GroupProbeArgv(pid)
	if err != nil {
		return nil
	}
	for delay := 20 * time.Millisecond; ; delay = min(2*delay, 500*time.Millisecond) {
		code, _, err := w.s.run(bound, argv, nil, nil)
		switch {
		case err != nil && due(bound):
			return w.stopped(ctx, bound)
		case err != nil:
			return err
		case code == 1:
			w.ev.Finished = time.Since(w.start)
			return nil
		case code != 0:
			return fmt.Errorf("kubernetes exec: process group probe exited %d", code)
		}
		select {
		case <-time.After(delay):
		case <-enforce:
			w.enforceNow(ctx)
			enforce = nil
		case <-bound.Done():
			return w.stopped(ctx, bound)
		}
	}
}

// due reports whether bound's deadline has passed. A probe whose WebSocket
// handshake ran into it fails with the connection's own deadline error (an
// i/o timeout), which can come an instant before bound.Err() reports it: that
// is the bound passing, a verdict, not a transport failure.
func due(bound context.Context) bool {
	if bound.Err() != nil {
		return true
	}
	dl, ok := bound.Deadline()
	return ok && !time.Now().Before(dl)
}

// enforceNow is the backstop at deadline + EnforceGrace: the watchdog should
// have killed the group by now and has not, so the command overran.
func (w *execWatch) enforceNow(ctx context.Context) {
	w.ev.Enforced = true
	w.killGroup(ctx)
}

// killGroup SIGKILLs the wrapper's process group with another exec, in the
// background, so that neither a slow API server nor a caller that left
// holds the call.
func (w *execWatch) killGroup(ctx context.Context) {
	if pid, ok := w.groupPid(); ok {
		w.s.KillGroup(ctx, pid)
	}
}

// groupPid is the wrapper's pid from its header, once decided.
func (w *execWatch) groupPid() (int, bool) {
	select {
	case <-w.hdr.Decided():
	case <-time.After(100 * time.Millisecond):
	}
	return w.hdr.Pid()
}

// lifeline is the exec's stdin: it delivers nothing and ends (EOF) when ctx
// is done, which is when the call is over. The wrapper's watchdog reads it
// and kills the command's group when it ends before the command did — the
// runtime also ends it when the stream drops with the executor.
type lifeline struct{ ctx context.Context }

func (l lifeline) Read([]byte) (int, error) {
	<-l.ctx.Done()
	return 0, io.EOF
}
