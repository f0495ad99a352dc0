package agentclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/sandgate/sandgate/core/agentwire"
	"github.com/sandgate/sandgate/core/sandbox"
)

// ExecOptions are what Exec needs of its backend.
type ExecOptions struct {
	// Workdir is sent to the agent; empty when the agent's own working
	// directory is the sandbox's workdir (Docker sets it on the exec).
	Workdir string
	// KillGroup SIGKILLs the command's process group (its pid in the
	// sandbox) through the engine, not the agent: the backstop when the
	// agent has not reported by deadline + EnforceGrace (it may have been
	// stopped or killed by the command). It must not block for long.
	KillGroup func(ctx context.Context, pid int)
	// GroupAlive reports whether process group pid has a live member,
	// asked through the engine: how a command whose agent was lost (the
	// command killed it) is followed to its deadline. Nil: such a command
	// is an error at once.
	GroupAlive func(ctx context.Context, pid int) (bool, error)
}

// Exec runs req through the agent (C-EXEC-1..5). The agent enforces the
// deadline and reports the evidence; this side keeps its own clock as the
// backstop (sandbox.EnforceGrace, sandbox.ReturnGrace), because a command
// can stop or kill the agent. A stream that ends without the agent's exit
// report is ErrLost, unless the return bound passed (TimedOut): never a
// guessed result.
func (c *Conn) Exec(ctx context.Context, req sandbox.ExecRequest, o ExecOptions) (sandbox.ExecResult, error) {
	if err := sandbox.ValidateExec(req); err != nil {
		return sandbox.ExecResult{}, err
	}
	run := &execRun{o: o, ev: sandbox.ExecEvidence{Deadline: sandbox.ExecDeadline(req.Timeout)}, start: time.Now()}
	run.stdout, run.stderr = sandbox.NewExecCaptures(req)
	bound := ctx
	if d := run.ev.Deadline; d > 0 {
		var cancel context.CancelFunc
		bound, cancel = context.WithDeadline(ctx, run.start.Add(d+sandbox.ReturnGrace))
		defer cancel()
	}
	body, err := json.Marshal(agentwire.ExecRequest{Command: req.Command, Workdir: o.Workdir,
		DeadlineSeconds: int64(run.ev.Deadline / time.Second), MaxOutputBytes: sandbox.MaxOutputBytes})
	if err != nil {
		return sandbox.ExecResult{}, err
	}
	hreq, err := http.NewRequest(http.MethodPost, url(agentwire.PathExec), bytes.NewReader(body))
	if err != nil {
		return sandbox.ExecResult{}, err
	}
	resp, err := c.do(bound, hreq)
	if err != nil {
		return run.failed(ctx, bound, err)
	}
	defer func() { _ = resp.Body.Close() }()
	err = run.follow(ctx, bound, resp.Body)
	if errors.Is(err, ErrLost) && ctx.Err() == nil && bound.Err() == nil {
		return run.afterLoss(ctx, bound, err)
	}
	if err != nil {
		res, err := run.failed(ctx, bound, err)
		if bound.Err() != nil && ctx.Err() == nil {
			// The agent did not report in time: stopped, or too busy to
			// be trusted with the next call. It is abandoned (a stopped
			// one stays stopped until the sandbox ends) and the next call
			// starts a fresh one.
			_ = c.Close()
		}
		return res, err
	}
	return run.result(), nil
}

// execRun is one exec's state on this side.
type execRun struct {
	o              ExecOptions
	start          time.Time
	ev             sandbox.ExecEvidence
	stdout, stderr *sandbox.Capture
	pid            int
	exit           *agentwire.ExecExit
}

// follow reads the agent's events until its exit report, killing the group
// through the engine at deadline + EnforceGrace if the report is late.
func (r *execRun) follow(ctx, bound context.Context, body io.Reader) error {
	events := make(chan agentwire.ExecEvent)
	done := make(chan error, 1)
	go func() { done <- r.decodeEvents(bound, body, events) }()
	var enforce <-chan time.Time
	if d := r.ev.Deadline; d > 0 {
		t := time.NewTimer(time.Until(r.start.Add(d + sandbox.EnforceGrace)))
		defer t.Stop()
		enforce = t.C
	}
	for {
		select {
		case ev := <-events:
			r.apply(ev)
		case err := <-done:
			if r.exit == nil && err == nil {
				err = fmt.Errorf("%w: the exec stream ended without an exit report", ErrLost)
			}
			return err
		case <-enforce:
			r.enforce(ctx)
		}
	}
}

// decodeEvents keeps the output of each event of body and sends the
// others (pid, exit) to out until the exit report (nil) or a failure; it
// stops sending once bound ends. Output is kept here, not by follow, so a
// streamed exec's sink that blocks (a slow reader) never holds back the
// backstop's clock.
func (r *execRun) decodeEvents(bound context.Context, body io.Reader, out chan<- agentwire.ExecEvent) error {
	dec := json.NewDecoder(body)
	for {
		var ev agentwire.ExecEvent
		if err := dec.Decode(&ev); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("%w: %w", ErrLost, err)
		}
		_, _ = r.stdout.Write(ev.Stdout)
		_, _ = r.stderr.Write(ev.Stderr)
		if ev.Pid == 0 && ev.Exit == nil {
			continue
		}
		select {
		case out <- ev:
		case <-bound.Done():
			return bound.Err()
		}
		if ev.Exit != nil {
			return nil
		}
	}
}

func (r *execRun) apply(ev agentwire.ExecEvent) {
	switch {
	case ev.Pid > 0 && r.pid == 0:
		r.pid = ev.Pid
	case ev.Exit != nil:
		r.exit = ev.Exit
	}
}

// enforce is the backstop at deadline + EnforceGrace: the agent has not
// reported, so the group is killed from outside.
func (r *execRun) enforce(ctx context.Context) {
	r.ev.Enforced = true
	if r.pid > 0 && r.o.KillGroup != nil {
		r.o.KillGroup(ctx, r.pid)
	}
}

// failed decides a call that ended without an exit report: the caller's
// cancellation is its error; the return bound passing is a verdict
// (TimedOut, killed from outside); anything else is the stream's failure.
func (r *execRun) failed(ctx, bound context.Context, err error) (sandbox.ExecResult, error) {
	switch {
	case ctx.Err() != nil:
		return sandbox.ExecResult{}, ctx.Err()
	case bound.Err() != nil && r.ev.Deadline > 0:
		if !r.ev.Enforced {
			r.enforce(ctx)
		}
		r.ev.ExitCode, r.ev.Finished = sandbox.ExitKilled, time.Since(r.start)
		return sandbox.NewExecResult(r.stdout, r.stderr, r.ev), nil
	}
	// The agent is lost with the command started: nobody inside kills
	// its group any more, so it is killed from outside.
	if r.pid > 0 && r.o.KillGroup != nil {
		r.o.KillGroup(ctx, r.pid)
	}
	return sandbox.ExecResult{}, err
}

// result is the verdict from the agent's report; the agent's own kill at
// the deadline counts as enforcement.
func (r *execRun) result() sandbox.ExecResult {
	r.ev.ExitCode = r.exit.Code
	r.ev.Finished = time.Duration(r.exit.FinishedMillis) * time.Millisecond
	r.ev.Enforced = r.ev.Enforced || r.exit.Killed
	res := sandbox.NewExecResult(r.stdout, r.stderr, r.ev)
	res.Truncated = res.Truncated || r.exit.Truncated
	return res
}

// afterLoss judges a command whose agent was lost mid-call (the command
// may have killed it) from outside the sandbox's processes. With a
// deadline, the command's group is followed until it empties — before the
// deadline its exit status went with the agent: an error; at or after it:
// TimedOut — or until the backstop kills it at deadline + EnforceGrace
// (TimedOut). Without one, the group is killed and the call fails: nobody
// would stop the command otherwise. A probe that fails is asked again: the
// command that killed its agent can kill a probe too (a kill-everything
// loop still running); only a sandbox gone ends the following early.
func (r *execRun) afterLoss(ctx, bound context.Context, lost error) (sandbox.ExecResult, error) {
	if r.ev.Deadline <= 0 || r.pid <= 0 || r.o.GroupAlive == nil {
		return r.failed(ctx, bound, lost)
	}
	enforceAt := r.start.Add(r.ev.Deadline + sandbox.EnforceGrace)
	for delay := 20 * time.Millisecond; ; delay = min(2*delay, 250*time.Millisecond) {
		alive, err := r.o.GroupAlive(bound, r.pid)
		switch {
		case bound.Err() != nil || ctx.Err() != nil:
			return r.failed(ctx, bound, lost)
		case errors.Is(err, sandbox.ErrNotFound):
			return r.failed(ctx, bound, fmt.Errorf("%w (group probe: %w)", lost, err))
		case err != nil:
			// No evidence either way: asked again below.
		case !alive:
			r.ev.Finished = time.Since(r.start)
			if r.ev.Finished < r.ev.Deadline && !r.ev.Enforced {
				return sandbox.ExecResult{}, lost
			}
			r.ev.ExitCode = sandbox.ExitKilled
			return sandbox.NewExecResult(r.stdout, r.stderr, r.ev), nil
		}
		if !r.ev.Enforced && !time.Now().Before(enforceAt) {
			r.enforce(ctx)
		}
		select {
		case <-time.After(delay):
		case <-bound.Done():
		}
	}
}
