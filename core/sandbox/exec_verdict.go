package sandbox

import "time"

// Deadline enforcement from outside the sandbox (C-EXEC-3). The in-sandbox
// watchdog kills the command's group at the deadline; the adapter watches
// its own clock as a backstop, because the command can kill the watchdog.
const (
	// EnforceGrace: when the wrapper (or, after NeedsGroupCheck, its group)
	// is still alive at deadline + EnforceGrace, the watchdog has failed and
	// the adapter kills the group itself with an exec of KillGroupArgv, and
	// records ExecEvidence.Enforced.
	EnforceGrace = 1 * time.Second
	// ReturnGrace bounds the whole call: Exec returns by deadline +
	// ReturnGrace whatever the sandbox does. An adapter that has not seen the
	// wrapper end by then returns TimedOut with ExitKilled.
	ReturnGrace = 2 * time.Second
	// ExitKilled is the exit code of a wrapper killed with SIGKILL (128+9):
	// what the daemon reports when the deadline struck, and what an adapter
	// reports when it gave up waiting for the daemon to say so.
	ExitKilled = 128 + 9
)

// maxSignal is the highest Linux signal number (SIGRTMAX).
const maxSignal = 64

// ExecEvidence is what an adapter observes of one exec with a deadline,
// entirely outside the sandbox: its own clock, and what the daemon reports.
// Nothing the command can write — files, stdout, stderr, the watchdog's mark
// — is evidence (B-6), because the command can forge all of it.
type ExecEvidence struct {
	// Deadline is ExecDeadline(req.Timeout); 0 means none.
	Deadline time.Duration
	// ExitCode is the wrapper's exit code as the daemon reports it (exec
	// inspect; 128+N when the wrapper died of signal N).
	ExitCode int
	// Finished is measured on the adapter's clock, from an instant taken
	// before it asks the daemon to start the exec (never later, or a
	// watchdog kill could look early) to the instant it observed the command
	// finished: when the daemon reported the wrapper gone — except when
	// NeedsGroupCheck(ExitCode), where it is when the wrapper's process group
	// was first seen empty (zombies do not count).
	Finished time.Duration
	// Enforced reports whether the adapter had to kill the group itself,
	// because the wrapper or its group was still alive at deadline +
	// EnforceGrace.
	Enforced bool
}

// timedOut reports whether an exec overran its deadline, from evidence only
// the adapter holds: the group had to be killed from outside, or the command
// was observed finished no earlier than its deadline. The exit code never
// decides it (a command may exit with any code, 124 and 137 included).
//
// Every adversarial case, and how the evidence decides it:
//
//   - Overruns with the watchdog intact: the watchdog kills the group at the
//     deadline, the wrapper dies of SIGKILL (137), the group check finds the
//     group empty at ≥ Deadline: TimedOut.
//   - Kills its watchdog, then overruns: the wrapper still runs at Deadline +
//     EnforceGrace, the adapter kills the group: Enforced, TimedOut.
//   - Kills its watchdog, overruns, then exits cleanly before the adapter
//     enforces: Finished ≥ Deadline: TimedOut, even with exit 0.
//   - Kills its wrapper (its parent) and keeps running: the wrapper dies of a
//     signal, NeedsGroupCheck, and the group outlives the wrapper until the
//     watchdog (or, if it was killed too, the adapter) kills it: Finished ≥
//     Deadline or Enforced: TimedOut.
//   - Closes stdout and stderr, then overruns: the streams' end says nothing;
//     the wrapper still runs, so the watchdog kills it: TimedOut.
//   - SIGKILLs itself (or its whole group) inside the deadline: exit 137, the
//     group is empty before Deadline: not TimedOut, ExitCode 137.
//   - Exits 124 inside the deadline: not TimedOut, ExitCode 124.
//   - Backgrounds a straggler that holds stdout open and exits: the wrapper
//     exits normally with the command's code, Finished < Deadline: not
//     TimedOut. The adapter must stop reading once the daemon reports the
//     wrapper gone (after draining what is already buffered), never wait for
//     stdout's EOF. The straggler keeps running, as it would without a
//     deadline.
//
// Known limits, accepted because each errs towards TimedOut or costs only
// the waiting:
//   - A command that is killed by a signal, or exits with 129..192 itself,
//     while leaving a straggler in its group is indistinguishable from one
//     that killed its wrapper: the adapter waits for the group until the
//     watchdog (or EnforceGrace) kills it, and reports TimedOut.
//   - A command that finishes less than one exec round trip before its
//     deadline may be observed finished after it, and is reported TimedOut
//     with its own exit code and output.
//   - Processes that left the group (setsid, a job-control shell) survive the
//     deadline kill; only the sandbox's pids limit and reaping contain them.
//   - GroupProbeArgv and KillGroupArgv run the sandbox's own /bin/bash. A
//     command that can replace it (root on a writable root filesystem) can
//     make its group look empty after killing its wrapper; it gains nothing
//     it could not get by leaving the group: the exec reports 137, not
//     TimedOut, and the process lives on. Docker's top is outside evidence
//     and immune; a read-only root filesystem closes it on Kubernetes.
func timedOut(e ExecEvidence) bool {
	if e.Deadline <= 0 {
		return false
	}
	return e.Enforced || e.Finished >= e.Deadline
}

// NeedsGroupCheck reports whether the wrapper's exit code says it may have
// died of a signal (129..192), so that the command may have killed its
// wrapper and still run. The adapter must then measure Finished as the
// moment the wrapper's process group is first seen empty, killing it
// itself at Deadline + EnforceGrace. The group is the header's pid (wait
// for HeaderStripper.Decided: the daemon may report the wrapper gone before
// the header has been read). A wrapper that exits on its own passes its
// command's status on, so a lower (or higher) code means the command
// finished when the wrapper did.
func NeedsGroupCheck(exitCode int) bool {
	return exitCode > 128 && exitCode <= 128+maxSignal
}

// NewExecResult assembles the ExecResult of a finished exec from its two
// captured streams (stderr already stripped of the wrapper's header) and
// the evidence. An exec without a deadline passes evidence with Deadline 0:
// it never times out.
func NewExecResult(stdout, stderr *Capture, e ExecEvidence) ExecResult {
	return ExecResult{
		Stdout:    stdout.String(),
		Stderr:    stderr.String(),
		ExitCode:  e.ExitCode,
		TimedOut:  timedOut(e),
		Truncated: stdout.Truncated() || stderr.Truncated(),
	}
}
