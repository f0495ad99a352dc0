package sandbox

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sandgate/sandgate/core/sandbox/shell"
)

// ExecRequest is one command to run with `/bin/bash -c` in the workdir.
type ExecRequest struct {
	Command string
	// Timeout is rounded up to whole seconds; 0 means no limit but the
	// context.
	Timeout time.Duration
	// Output, when set, receives the output as the command produces it
	// (a streamed exec); the result still carries all of it.
	Output OutputSink
}

// ExecResult is what a finished command did. A non-zero exit, output on
// stderr and a command killed at its deadline are all results, not errors.
type ExecResult struct {
	Stdout    string
	Stderr    string
	ExitCode  int
	TimedOut  bool
	Truncated bool
}

// MaxCommandBytes is the longest command an exec can carry. The command
// travels as one argv string, and Linux refuses any single argv string of
// more than 32 pages (MAX_ARG_STRLEN, 131072 bytes with its terminating NUL)
// with E2BIG — a failure the daemon would report as an opaque start error.
const MaxCommandBytes = 128<<10 - 1

// ErrInvalidExec classifies an ExecRequest that ValidateExec refuses; the
// wrapping error names the field and what is wrong with it.
var ErrInvalidExec = errors.New("invalid exec request")

// ValidateExec refuses what no exec could carry out faithfully: a negative
// Timeout (0 already means "no limit but the context"), a Command holding a
// NUL byte (an argv string ends at the first NUL, so the tail would be
// silently dropped) and a Command longer than MaxCommandBytes.
//
// An empty Command is accepted: `/bin/bash -c ""` is well defined (it exits 0
// and prints nothing), and Exec's error return is reserved for the sandbox
// failing the caller, not for a command that does nothing.
func ValidateExec(req ExecRequest) error {
	if req.Timeout < 0 {
		return fmt.Errorf("exec timeout %v: negative (0 means no limit): %w", req.Timeout, ErrInvalidExec)
	}
	if i := strings.IndexByte(req.Command, 0); i >= 0 {
		return fmt.Errorf("exec command: NUL byte at offset %d: %w", i, ErrInvalidExec)
	}
	if len(req.Command) > MaxCommandBytes {
		return fmt.Errorf("exec command: %d bytes, longer than the %d a single argument can hold: %w",
			len(req.Command), MaxCommandBytes, ErrInvalidExec)
	}
	return nil
}

// ExecDeadline is the deadline an exec enforces for timeout: timeout rounded
// up to whole seconds, because the in-sandbox watchdog sleeps whole seconds
// (1ns → 1s, 1s → 1s, 1.001s → 2s). It is 0 (no deadline) for a timeout of
// 0 or less, and saturates at the largest whole-second Duration instead of
// overflowing.
func ExecDeadline(timeout time.Duration) time.Duration {
	if timeout <= 0 {
		return 0
	}
	r := timeout.Truncate(time.Second)
	if r < timeout && r <= maxDuration-time.Second {
		r += time.Second
	}
	return r
}

// maxDuration is the largest time.Duration.
const maxDuration = time.Duration(1<<63 - 1)

// deadlineSeconds is ExecDeadline in whole seconds, the number the wrapper's
// watchdog sleeps; 0 means no deadline.
func deadlineSeconds(timeout time.Duration) int64 {
	return int64(ExecDeadline(timeout) / time.Second)
}

// execName is $0 of the wrapper, so that bash's own messages (a failed cd)
// name sandgate rather than a bare "bash".
const execName = "sandgate-exec"

// ExecArgv is the argv that runs req, which ValidateExec accepted: always
// the wrapper shell.ExecWrapper (exec_wrapper.go says what stdin the adapter
// must attach, and ExecEvidence how it reads the outcome), with the deadline
// in whole seconds (0: none). workdir is empty when the backend sets the exec's
// working directory itself (Docker's WorkingDir); otherwise the wrapper cds
// there first (Kubernetes), the path passed as an argument, never as script
// text.
//
//	/bin/bash -c WRAPPER sandgate-exec SECONDS WORKDIR CMD
func ExecArgv(req ExecRequest, workdir string) []string {
	secs := strconv.FormatInt(deadlineSeconds(req.Timeout), 10)
	return []string{"/bin/bash", "-c", shell.ExecWrapper, execName, secs, workdir, req.Command}
}
