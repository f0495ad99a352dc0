package agent

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandgate/sandgate/core/agentwire"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/core/strictjson"
)

// maxExecBody bounds an ExecRequest document: the longest command, every
// byte escaped as \u00XX, and room for the rest.
const maxExecBody = 6*sandbox.MaxCommandBytes + 64<<10

// groupPoll is how often the group of a leader that died of a signal is
// looked at until it is empty.
const groupPoll = 10 * time.Millisecond

// exec serves PathExec: exec-wrapper.sh's steps with system calls.
func (s *Server) exec(w http.ResponseWriter, r *http.Request) {
	req, err := decodeExec(w, r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	out := newEventWriter(w, req.MaxOutputBytes)
	if out == nil {
		writeError(w, r, fmt.Errorf("the response cannot be streamed"))
		return
	}
	// Step 3 of the wrapper: a workdir that cannot be entered is exit 126
	// with the shell's message, and the command never runs.
	if reason := enterError(req.Workdir); reason != "" {
		out.begin()
		out.output(true, fmt.Appendf(nil, "sandgate-exec: cd: %s: %s\n", req.Workdir, reason))
		out.exit(agentwire.ExecExit{Code: 126})
		return
	}
	run, err := s.start(req)
	if err != nil {
		writeError(w, r, err)
		return
	}
	out.begin()
	out.event(agentwire.ExecEvent{Pid: run.pid})
	// The pid is with the provider (or the caller is gone): let it run.
	run.release(r.Context().Err() == nil)
	exit := run.wait(r.Context(), out)
	if r.Context().Err() == nil {
		out.exit(exit)
	}
}

// decodeExec reads and validates an ExecRequest.
func decodeExec(w http.ResponseWriter, r *http.Request) (agentwire.ExecRequest, error) {
	var req agentwire.ExecRequest
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxExecBody))
	if err != nil {
		return req, fmt.Errorf("exec request: %w: %w", errInvalid, err)
	}
	if err := strictjson.Unmarshal(body, &req); err != nil {
		return req, fmt.Errorf("exec request: %w: %w", errInvalid, err)
	}
	if err := sandbox.ValidateExec(sandbox.ExecRequest{Command: req.Command}); err != nil {
		return req, fmt.Errorf("%w: %w", errInvalid, err)
	}
	switch {
	case req.DeadlineSeconds < 0:
		return req, fmt.Errorf("exec deadline_seconds %d: negative: %w", req.DeadlineSeconds, errInvalid)
	case req.MaxOutputBytes < 0:
		return req, fmt.Errorf("exec max_output_bytes %d: negative: %w", req.MaxOutputBytes, errInvalid)
	case strings.IndexByte(req.Workdir, 0) >= 0:
		return req, fmt.Errorf("exec workdir: NUL byte: %w", errInvalid)
	}
	return req, nil
}

// enterError is why dir cannot be the command's working directory, in the
// C library's words, or "" when it can (or is empty: the agent's own).
func enterError(dir string) string {
	if dir == "" {
		return ""
	}
	fi, err := os.Stat(dir)
	switch {
	case err != nil:
		return strerror(err)
	case !fi.IsDir():
		return syscall.ENOTDIR.Error()
	}
	if err := unix.Access(dir, unix.X_OK); err != nil {
		return strerror(err)
	}
	return ""
}

// run is one command from its spawn to its verdict.
type run struct {
	s        *Server
	cmd      *exec.Cmd
	pid      int
	started  time.Time
	deadline time.Duration
	secs     int64
	pumps    [2]*pump
	// release lets the held command run (true) or end unrun (false).
	release func(run bool)
	chunks  chan chunk
	quit    chan struct{}
	waited  chan struct{}
	// reaped and emptied are when the leader was reaped and when its group
	// was first seen empty, taken where it happens (not where the output
	// loop notices it, which a slow caller can delay): the evidence of
	// FinishedMillis. Each is written before its channel is closed.
	reaped, emptied time.Duration
	expiry          *expiry
}

// start spawns `/bin/bash -c CMD` with stdin /dev/null, in Workdir, in a
// process group of its own, its stdout and stderr on pipes of the agent.
func (s *Server) start(req agentwire.ExecRequest) (*run, error) {
	var pipes [2][2]*os.File // [stream][read, write]
	for i := range pipes {
		rd, wr, err := os.Pipe()
		if err != nil {
			closeAll(pipes)
			return nil, fmt.Errorf("exec: pipe: %w", err)
		}
		pipes[i] = [2]*os.File{rd, wr}
	}
	rn := &run{s: s, secs: req.DeadlineSeconds, deadline: seconds(req.DeadlineSeconds),
		chunks: make(chan chunk), quit: make(chan struct{}), waited: make(chan struct{})}
	rn.started = time.Now()
	cmd, release, err := s.holder().start(req.Command, func(cmd *exec.Cmd) {
		cmd.Dir = req.Workdir
		cmd.Stdout, cmd.Stderr = pipes[0][1], pipes[1][1]
	})
	_ = pipes[0][1].Close()
	_ = pipes[1][1].Close()
	if err != nil {
		_ = pipes[0][0].Close()
		_ = pipes[1][0].Close()
		return nil, fmt.Errorf("exec: start /bin/bash: %w", err)
	}
	rn.cmd = cmd
	rn.pid = cmd.Process.Pid
	// The waiter starts with the release: a held (traced) command's stop
	// must be left to the holder, not reaped as an exit.
	rn.release = func(run bool) {
		release(run)
		go func() {
			_ = cmd.Wait()
			rn.reaped = time.Since(rn.started)
			close(rn.waited)
		}()
	}
	s.track(rn.pid)
	if rn.deadline > 0 {
		rn.expiry = newExpiry(rn.pid, rn.deadline-time.Since(rn.started))
	}
	for i := range rn.pumps {
		rn.pumps[i] = newPump(pipes[i][0], i == 1)
		go rn.pumps[i].run(rn.chunks, rn.quit)
	}
	return rn, nil
}

// seconds is a deadline in whole seconds as a Duration, saturated.
func seconds(secs int64) time.Duration {
	if secs > math.MaxInt64/int64(time.Second) {
		return math.MaxInt64
	}
	return time.Duration(secs) * time.Second
}

func closeAll(pipes [2][2]*os.File) {
	for _, p := range pipes {
		for _, f := range p {
			if f != nil {
				_ = f.Close()
			}
		}
	}
}

// wait forwards the command's output until it is finished and returns how
// it ended. The context's end (the caller went away) SIGKILLs the group at
// once.
func (rn *run) wait(ctx context.Context, out *eventWriter) agentwire.ExecExit {
	defer close(rn.quit)
	finished, ok := rn.finish(ctx, out)
	// Untracked once finished: what the command left running is no longer
	// the agent's to kill, not even when its stdin ends.
	rn.s.untrack(rn.pid)
	if !ok {
		return agentwire.ExecExit{}
	}
	killed := rn.expiry.stop()
	end := time.Now().Add(drainMax)
	for _, p := range rn.pumps {
		p.drain(end)
	}
	// The drain ignores the caller's departure: it is bounded, and the
	// stragglers it may meet are the command's to keep.
	rn.forward(context.Background(), out, rn.pumpsStopped())
	select { // a mark not relayed yet
	case <-rn.expiry.markC():
		rn.sendMark(out)
	default:
	}
	return agentwire.ExecExit{Code: exitCode(rn.cmd.ProcessState), FinishedMillis: finished.Milliseconds(),
		Killed: killed, Truncated: out.truncated}
}

// finish relays output until the command is finished and returns when it
// was: the leader's reaping, or — when the leader died of a signal under a
// deadline, so the command may have killed its leader and run on — the
// moment its group was first seen empty (zombies do not count), the
// deadline still killing the group. ok is false when the caller went away
// first (the group is then killed).
func (rn *run) finish(ctx context.Context, out *eventWriter) (time.Duration, bool) {
	if !rn.forward(ctx, out, rn.waited) {
		return 0, false
	}
	if rn.deadline <= 0 || !sandbox.NeedsGroupCheck(exitCode(rn.cmd.ProcessState)) {
		return rn.reaped, true
	}
	if !rn.forward(ctx, out, rn.groupGone()) {
		return 0, false
	}
	return rn.emptied, true
}

// forward relays output and the deadline mark until until is closed. It
// returns false when the context ended first, after killing the group.
func (rn *run) forward(ctx context.Context, out *eventWriter, until <-chan struct{}) bool {
	for {
		select {
		case c := <-rn.chunks:
			out.output(c.stderr, c.data)
		case <-rn.expiry.markC():
			rn.sendMark(out)
		case <-until:
			return true
		case <-ctx.Done():
			if cutOff(ctx) {
				rn.abandon()
				return false
			}
			killGroup(rn.pid)
			rn.expiry.stop()
			<-rn.waited
			return false
		}
	}
}

// abandon leaves the command to its end or its deadline, its output going
// nowhere: its caller was cut off (a daemon's relay died, killed by a
// command), and the executor follows it from outside, as when a command
// kills a `serve` agent.
func (rn *run) abandon() {
	for {
		select {
		case <-rn.chunks:
		case <-rn.expiry.markC():
		case <-rn.waited:
			return
		}
	}
}

// sendMark writes the deadline mark on the command's stderr stream.
func (rn *run) sendMark(out *eventWriter) {
	out.output(true, fmt.Appendf(nil, agentwire.DeadlineMark, rn.secs))
}

// groupGone is closed once the command's group has no live member.
func (rn *run) groupGone() <-chan struct{} {
	gone := make(chan struct{})
	go func() {
		defer close(gone)
		t := time.NewTicker(groupPoll)
		defer t.Stop()
		for groupAlive(rn.pid) {
			select {
			case <-t.C:
			case <-rn.quit:
				return
			}
		}
		rn.emptied = time.Since(rn.started)
	}()
	return gone
}

// pumpsStopped is closed once both pumps deliver no more.
func (rn *run) pumpsStopped() <-chan struct{} {
	done := make(chan struct{})
	go func() {
		<-rn.pumps[0].stopped
		<-rn.pumps[1].stopped
		close(done)
	}()
	return done
}

// exitCode is the wait status as a shell reports it: the exit status, or
// 128+N for a death by signal N.
func exitCode(st *os.ProcessState) int {
	ws, ok := st.Sys().(syscall.WaitStatus)
	if ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return st.ExitCode()
}
