package sandbox

import (
	"fmt"
	"strconv"

	"github.com/sandgate/sandgate/core/sandbox/shell"
)

// Every command runs under the wrapper W, shell.ExecWrapper
// (exec-wrapper.sh, which documents its steps), as the main process of one
// exec (ExecArgv): W leads its own process group, writes the header
// HeaderPrefix<pid> to stderr before the command exists, enters the workdir,
// and kills the command's whole group when the deadline passes or the
// caller's lifeline (the exec's stdin, held open by the adapter and never
// written) ends.

// HeaderPrefix starts the header line the wrapper writes to stderr
// (exec-wrapper.sh spells it out; a test pins that the two agree).
const HeaderPrefix = "sandgate-exec:"

// maxPid is PID_MAX_LIMIT on 64-bit Linux; no process has a larger pid.
const maxPid = 1 << 22

// KillGroupArgv is the argv of the exec an adapter runs to SIGKILL the
// process group pid from outside, when the wrapper still runs at deadline +
// EnforceGrace. pid is the header's (HeaderStripper.Pid), which counts in
// the sandbox's pid namespace — not Docker's ExecInspect pid, which counts
// on the host. It exits 0 when the signal was sent and 1 when the group no
// longer exists (or may not be signalled). A pid below 2 is refused:
// no wrapper can have it, and group 1 or 0 would hit the sandbox's init or
// the killer itself.
func KillGroupArgv(pid int) ([]string, error) {
	if err := checkGroupPid(pid); err != nil {
		return nil, err
	}
	return []string{"/bin/bash", "-c", shell.KillGroup, "sandgate-kill", strconv.Itoa(pid)}, nil
}

// GroupProbeArgv is the argv of the exec that tells whether the process
// group pid still has a live (non-zombie) member — the group check
// NeedsGroupCheck asks for, for a backend that cannot list processes from
// outside (Kubernetes). Exit 0: a member lives; 1: the group is empty; any
// other code: the probe itself failed. Docker can instead list `top -o
// pid,pgid,stat` and match the pgid against ExecInspect's (host) pid,
// ignoring zombies (stat Z).
func GroupProbeArgv(pid int) ([]string, error) {
	if err := checkGroupPid(pid); err != nil {
		return nil, err
	}
	return []string{"/bin/bash", "-c", shell.GroupProbe, "sandgate-probe", strconv.Itoa(pid)}, nil
}

// GroupAlive reads GroupProbeArgv's exit code: 0 alive, 1 empty, any
// other the probe's own failure.
func GroupAlive(code int) (bool, error) {
	switch code {
	case 0:
		return true, nil
	case 1:
		return false, nil
	}
	return false, fmt.Errorf("process group probe exited %d", code)
}

// checkGroupPid refuses a pid no wrapper can have.
func checkGroupPid(pid int) error {
	if pid < 2 || pid > maxPid {
		return fmt.Errorf("process group %d: not a wrapper pid (want 2..%d): %w", pid, maxPid, ErrInvalidExec)
	}
	return nil
}
