package docker

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/docker/docker/pkg/stdcopy"

	"github.com/sandgate/sandgate/core/sandbox"
)

// Polling of exec inspect while a command runs: it is how a command whose
// straggler holds stdout open is seen to have finished (the stream's EOF
// never comes), and how a command that closed its streams is followed. Polls
// are sparse: a short command never pays for one, and 32 sessions running
// long commands at once do not double the daemon's load (exec-parallel-32).
const (
	pollFirst = 500 * time.Millisecond
	pollMax   = time.Second
	// Once the daemon reported the command finished, output still in flight
	// is read until the stream ends, or goes quiet for drainQuiet (a
	// straggler holds it open), or drainMax has passed.
	drainQuiet = 250 * time.Millisecond
	drainMax   = 1500 * time.Millisecond
	// finishReserve: under a deadline the watch gives up this long before
	// the call's return bound (deadline + ReturnGrace), which leaves the
	// time to kill the group, close the streams and ask whether the sandbox
	// went away — daemon calls that a loaded engine answers in hundreds of
	// ms — inside the bound (C-EXEC-3).
	finishReserve = 500 * time.Millisecond
	// rePoll is the group check's period right after the adapter killed the
	// group itself: the kill lands within ms, and a sparse poll would
	// spend the reserve.
	rePoll = 50 * time.Millisecond
)

// Exec on the fallback path (C-EXEC-1..5). The deadline is enforced
// inside by the core's wrapper and judged outside from daemon-side evidence
// (sandbox.ExecEvidence): this clock, exec inspect, container top.
func (s scripts) Exec(ctx context.Context, req sandbox.ExecRequest) (sandbox.ExecResult, error) {
	if err := sandbox.ValidateExec(req); err != nil {
		return sandbox.ExecResult{}, err
	}
	deadline := sandbox.ExecDeadline(req.Timeout)
	start := time.Now()    // before the exec starts, so a watchdog kill never looks early
	var returnBy time.Time // zero: no deadline, no bound but the context
	if deadline > 0 {
		returnBy = start.Add(deadline + sandbox.ReturnGrace)
	}
	// stdin attached and never written: the wrapper's lifeline, which the
	// daemon ends when this connection closes — the call returned, was
	// cancelled, or the executor died — and the command's group dies then.
	execID, hij, err := s.startExec(ctx, sandbox.ExecArgv(req, ""), true)
	if err != nil {
		// A daemon that fails the start of an exec in a container being
		// removed answers it with a 500, not a NotFound.
		if s.lostSandbox(ctx, err, 0, returnBy) {
			return sandbox.ExecResult{}, errGone
		}
		return sandbox.ExecResult{}, err
	}
	defer hij.Close()
	stdout, stderr := sandbox.NewExecCaptures(req)
	hdr := sandbox.NewHeaderStripper(stderr)
	copied := make(chan struct{})
	w := &execWatch{s: s.handle, execID: execID, start: start, hdr: hdr, copied: copied,
		ev: sandbox.ExecEvidence{Deadline: deadline}}
	go func() {
		defer close(copied)
		_, _ = stdcopy.StdCopy(counting{stdout, &w.arrived}, counting{hdr, &w.arrived}, hij.resp.Reader)
	}()
	err = w.run(ctx, returnBy)
	hij.Close()
	<-copied
	_ = hdr.Flush()
	// A sandbox that went away killed the command: that is no result
	// (C-EXEC-5), and only the engine can tell it from a command killed by a
	// signal inside a living sandbox.
	if s.lostSandbox(ctx, err, w.ev.ExitCode, returnBy) {
		return sandbox.ExecResult{}, errGone
	}
	if err != nil {
		return sandbox.ExecResult{}, err
	}
	return sandbox.NewExecResult(stdout, stderr, w.ev), nil
}

// execWatch follows one exec until the command is finished, gathering the
// evidence the verdict needs.
type execWatch struct {
	s      *handle
	execID string
	start  time.Time
	hdr    *sandbox.HeaderStripper
	copied <-chan struct{}
	ev     sandbox.ExecEvidence
	// arrived counts output bytes, so the drain can tell a stream still
	// delivering from one a straggler holds open in silence.
	arrived atomic.Int64
}

// counting adds what passes through to n.
type counting struct {
	w io.Writer
	n *atomic.Int64
}

func (c counting) Write(p []byte) (int, error) {
	c.n.Add(int64(len(p)))
	return c.w.Write(p)
}

// run waits for the wrapper to end, then — when its exit code says it died
// of a signal under a deadline — for its process group to empty. Under a
// deadline every daemon call is bounded by returnBy less finishReserve, so a
// loaded daemon cannot hold the call past returnBy (C-EXEC-3).
func (w *execWatch) run(ctx context.Context, returnBy time.Time) error {
	bound := ctx
	var enforce <-chan time.Time
	if d := w.ev.Deadline; d > 0 {
		var cancel context.CancelFunc
		bound, cancel = context.WithDeadline(ctx, returnBy.Add(-finishReserve))
		defer cancel()
		t := time.NewTimer(time.Until(w.start.Add(d + sandbox.EnforceGrace)))
		defer t.Stop()
		enforce = t.C
	}
	hostPid, err := w.waitWrapper(ctx, bound, enforce)
	if err != nil || hostPid == 0 || w.ev.Deadline == 0 || !sandbox.NeedsGroupCheck(w.ev.ExitCode) {
		return err
	}
	return w.waitGroup(ctx, bound, hostPid, enforce)
}

// stopped decides how a wait ends when bound is done or a daemon call
// failed: the caller's cancellation is an error (closing the attach ends
// the wrapper's lifeline, and its watchdog kills the command's group — the
// same path as an executor that dies); the return bound passing is a
// verdict (TimedOut, killed); anything else is the daemon's error.
func (w *execWatch) stopped(ctx, bound context.Context, err error) error {
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("docker exec: %w", ctx.Err())
	case bound.Err() != nil:
		w.killGroup(ctx)
		w.ev.Enforced, w.ev.Finished = true, time.Since(w.start)
		if w.ev.ExitCode == 0 {
			w.ev.ExitCode = sandbox.ExitKilled
		}
		return nil
	}
	return err
}

// waitWrapper returns once the daemon reports the wrapper gone, recording
// its exit code and the time; it returns W's host pid for the group check.
func (w *execWatch) waitWrapper(ctx, bound context.Context, enforce <-chan time.Time) (int, error) {
	poll := time.NewTimer(pollFirst)
	defer poll.Stop()
	copied := w.copied
	for delay := pollFirst; ; {
		select {
		case <-copied:
			copied = nil // streams ended; the wrapper may still run (closed its streams)
		case <-poll.C:
			delay = min(2*delay, pollMax)
			poll.Reset(delay)
		case <-enforce:
			w.enforceNow(ctx)
			enforce = nil
			delay = rePoll
			poll.Reset(delay)
			continue
		case <-bound.Done():
			return 0, w.stopped(ctx, bound, nil)
		}
		ins, err := w.s.p.eng.ContainerExecInspect(bound, w.execID)
		if err != nil {
			return 0, w.stopped(ctx, bound, translate(err, "exec inspect"))
		}
		if !ins.Running {
			w.ev.ExitCode, w.ev.Finished = ins.ExitCode, time.Since(w.start)
			w.drain(bound.Done())
			return ins.Pid, nil
		}
	}
}

// drain reads output still in flight once the wrapper is gone: until the
// stream ends, goes quiet (a straggler holding it open does not hold the
// call), drainMax passes or stop (the return bound) closes.
func (w *execWatch) drain(stop <-chan struct{}) {
	limit := time.After(drainMax)
	tick := time.NewTicker(drainQuiet)
	defer tick.Stop()
	last := w.arrived.Load()
	for {
		select {
		case <-w.copied:
			return
		case <-limit:
			return
		case <-stop:
			return
		case <-tick.C:
			now := w.arrived.Load()
			if now == last {
				return
			}
			last = now
		}
	}
}

// waitGroup follows a wrapper that died of a signal: the command may have
// killed it and still run in its group. Finished becomes the moment the
// group is seen empty.
func (w *execWatch) waitGroup(ctx, bound context.Context, hostPid int, enforce <-chan time.Time) error {
	for delay := 20 * time.Millisecond; ; delay = min(2*delay, pollMax) {
		alive, err := w.groupAlive(bound, hostPid)
		if err != nil {
			return w.stopped(ctx, bound, err)
		}
		if !alive {
			w.ev.Finished = time.Since(w.start)
			return nil
		}
		select {
		case <-time.After(delay):
		case <-enforce:
			w.enforceNow(ctx)
			enforce = nil
			delay = rePoll / 2 // doubled by the loop
		case <-bound.Done():
			return w.stopped(ctx, bound, nil)
		}
	}
}

// enforceNow is the backstop at deadline + EnforceGrace: the watchdog should
// have killed the group by now and has not, so the command overran
// (Enforced), and the group is killed from outside.
func (w *execWatch) enforceNow(ctx context.Context) {
	w.ev.Enforced = true
	w.killGroup(ctx)
}

// killGroup SIGKILLs the wrapper's process group, named by the wrapper's
// header once it is decided, with another exec in the background, so that
// a loaded daemon does not hold the call.
func (w *execWatch) killGroup(ctx context.Context) {
	select {
	case <-w.hdr.Decided():
	case <-time.After(100 * time.Millisecond):
	}
	if pid, ok := w.hdr.Pid(); ok {
		w.s.KillGroup(ctx, pid)
	}
}

// groupAlive reports whether the wrapper's process group has a live member.
// Under gVisor the engine's top cannot tell (handle.gvisor): the sandbox's
// kernel is asked instead, with an exec of the core's probe naming the
// group by the pid the wrapper's header gave — gVisor's Sentry answers,
// which the command cannot forge either.
func (w *execWatch) groupAlive(ctx context.Context, hostPid int) (bool, error) {
	if !w.s.gvisor {
		return w.s.groupAlive(ctx, hostPid)
	}
	pid, ok := w.hdr.Pid()
	if !ok {
		return false, nil // no header: the command never started
	}
	return w.s.GroupAlive(ctx, pid)
}

// groupAlive reports whether the process group led by hostPid (the wrapper's
// pid as the daemon sees it) has a live member, from `top` — the daemon's
// view, which the command cannot forge. Zombies do not count.
func (s *handle) groupAlive(ctx context.Context, hostPid int) (bool, error) {
	top, err := s.p.eng.ContainerTop(ctx, s.id, []string{"-o", "pid,pgid,stat"})
	if err != nil {
		return false, translate(err, "top")
	}
	return liveRow(top.Titles, top.Processes, "PGID", strconv.Itoa(hostPid)), nil
}
