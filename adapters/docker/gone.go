package docker

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"

	"github.com/sandgate/sandgate/core/sandbox"
)

// A sandbox that goes away mid-call (removed, stopped, killed) takes its
// execs with it: the pid namespace's end SIGKILLs them, so the daemon
// reports 137 — the same code as a command SIGKILLed inside a living
// sandbox. Only the engine can tell the two apart, and only afterwards, so
// nothing here costs the fast path: a call asks after an exec died of a
// signal or its stream failed (vanished), and a call still running after
// watchAfter follows the engine's events (watchGone), because a write whose exec
// died can block on the daemon's stdin copy until the client hangs up.
const (
	// watchAfter: a call running this long starts watching its container.
	watchAfter = 500 * time.Millisecond
	// settleMax bounds vanished: the daemon may still call the container
	// running, with its task already gone, for a few hundred ms after an
	// exec of it was reported killed.
	settleMax = 3 * time.Second
	// settleEvery is vanished's period while the evidence is ambiguous.
	settleEvery = 50 * time.Millisecond
)

// errGone is the error of a call whose sandbox went away under it.
var errGone = fmt.Errorf("docker: the sandbox went away during the call: %w", sandbox.ErrNotFound)

// lostSandbox reports whether a call that failed (err), whose exec died of
// a signal or could not start (code) lost its sandbox: the engine announced
// its end (errCut), or it has vanished. A caller that left is answered its
// context's error instead. A call that must return by a time (an exec under
// a deadline, C-EXEC-3) passes it as by: evidence that is not clear by then
// counts as "not lost", the caller's own verdict stands.
func (s *handle) lostSandbox(ctx context.Context, err error, code int, by time.Time) bool {
	if ctx.Err() != nil {
		return false
	}
	return errors.Is(err, errCut) || (err != nil || code == execNotStarted || sandbox.NeedsGroupCheck(code)) && s.vanished(ctx, by)
}

// execNotStarted is the code the daemon gives an exec it could not start,
// as when the container is being torn down.
const execNotStarted = 126

// vanished reports whether the container is gone or going: the engine no
// longer knows it, no longer calls it running, or no longer lists its init
// process alive. A failed top while inspect still says running is the
// window in which the daemon has not yet processed the init's exit; it is
// asked again until the evidence is clear or settleMax (or by, when set and
// sooner) has passed (alive: the caller keeps its own verdict). It runs on a
// context of its own, bounded, so a caller that left still gets its answer
// classified.
func (s *handle) vanished(ctx context.Context, by time.Time) bool {
	limit := time.Now().Add(settleMax)
	if !by.IsZero() && by.Before(limit) {
		limit = by
	}
	ctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), limit)
	defer cancel()
	for {
		gone, sure := s.goneOnce(ctx)
		if sure {
			return gone
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(settleEvery):
		}
	}
}

// goneOnce is one look at the container: gone, and whether the look was
// conclusive.
func (s *handle) goneOnce(ctx context.Context) (gone, sure bool) {
	c, err := s.p.eng.ContainerInspect(ctx, s.id)
	switch {
	case cerrdefs.IsNotFound(err):
		return true, true
	case err != nil:
		return false, false
	case c.State == nil || !c.State.Running || c.State.Restarting:
		return true, true
	}
	if s.gvisor {
		// runsc's pids are not the host's: the engine's top lists other
		// processes, so the engine's state is the whole answer.
		return false, true
	}
	top, err := s.p.eng.ContainerTop(ctx, s.id, []string{"-o", "pid,stat"})
	if err != nil {
		// Not conclusive, even as NotFound: the daemon calls NotFound any
		// task error whose text says "not found", and a task really gone
		// shows in inspect within a few hundred ms.
		return false, false
	}
	return !liveRow(top.Titles, top.Processes, "PID", strconv.Itoa(c.State.Pid)), true
}

// liveRow reports whether a top listing has a non-zombie row whose column
// col is want.
func liveRow(titles []string, rows [][]string, col, want string) bool {
	at, statAt := -1, -1
	for i, t := range titles {
		switch t {
		case col:
			at = i
		case "STAT":
			statAt = i
		}
	}
	if at < 0 || statAt < 0 {
		return false
	}
	for _, row := range rows {
		if len(row) > max(at, statAt) && row[at] == want && row[statAt] != "" && row[statAt][0] != 'Z' {
			return true
		}
	}
	return false
}

// watchGone runs onGone once when the engine announces, while the call
// lasts, that the container is being killed, stopped or removed: a sandbox
// that went away leaves the daemon's stdin copy of a write's exec blocked —
// holding the container's lock, so inspect and exec inspect hang too —
// until the client hangs up. The engine's event stream takes no such lock.
// The subscription starts after watchAfter and replays from the call's
// start, so calls shorter than that never ask the engine anything (the
// replay comes from the daemon's buffer of recent events: on an engine busy
// enough to roll it within watchAfter, a write can still wait for the
// daemon as before). The call ends the watch with the returned stop, which
// waits for it.
func (s *handle) watchGone(ctx context.Context, since time.Time, onGone func()) (stop func()) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-ctx.Done():
			return
		case <-time.After(watchAfter):
		}
		msgs, errs := s.p.eng.Events(ctx, events.ListOptions{
			Since: strconv.FormatInt(since.Unix(), 10),
			Filters: filters.NewArgs(filters.Arg("type", string(events.ContainerEventType)),
				filters.Arg("container", s.id), filters.Arg("event", string(events.ActionKill)),
				filters.Arg("event", string(events.ActionDie)), filters.Arg("event", string(events.ActionDestroy))),
		})
		for {
			select {
			case <-ctx.Done():
				return
			case err := <-errs:
				_ = err // the watch is best effort: the call keeps its own outcome
				return
			case m := <-msgs:
				if m.Action != events.ActionKill || endingSignal[m.Actor.Attributes["signal"]] {
					onGone()
					return
				}
			}
		}
	}()
	return func() { cancel(); <-done }
}

// endingSignal are the signals of the engine's stop, kill and forced
// removal; another signal sent to the container need not end it.
var endingSignal = map[string]bool{"9": true, "15": true}

// errCut is a script's stream closed because the engine announced the
// sandbox's end (a kill by SIGKILL or SIGTERM, a die, a destroy). The call
// answers ErrNotFound on that evidence alone: a busy daemon can go on
// calling the container running, its init alive, for longer than vanished
// waits (seen at load 25, a write racing a DELETE), and the call is cut
// either way.
var errCut = errors.New("docker exec: stream closed: the engine is ending the sandbox")
