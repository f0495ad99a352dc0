package agent

import (
	"fmt"
	"log"
	"os"
	"os/exec"

	"golang.org/x/sys/unix"
)

// A command must not run before its pid has reached the provider: one that
// kills its agent at once (C-EXEC-4's rows do) would otherwise leave the
// provider without the group to follow from outside, and its call without
// a verdict. So each command starts as the agent's own binary under
// GatedVerb, which waits on a pipe (fd 3) until the agent has reported the
// pid, then execs `/bin/bash -c CMD` in place (same pid, same group). If
// the agent dies before it lets go, the pipe ends empty and the command
// never runs: nothing runs unsupervised.

// GatedVerb is the agent binary's argument that starts a held command.
const GatedVerb = "exec-gated"

// gateFD is the held command's end of the gate pipe.
const gateFD = 3

// exitNotReleased is the status of a held command whose agent never let go.
const exitNotReleased = 125

// RunGated is the held command's side (the binary's main under
// GatedVerb): wait for one byte on the gate, close it, exec bash. It
// returns only on failure.
func RunGated(command string, logger *log.Logger) int {
	gate := os.NewFile(gateFD, "gate")
	var b [1]byte
	n, _ := gate.Read(b[:])
	_ = gate.Close()
	if n != 1 {
		return exitNotReleased
	}
	err := unix.Exec("/bin/bash", []string{"/bin/bash", "-c", command}, os.Environ())
	logger.Printf("exec /bin/bash: %v", err)
	return 127
}

// gatedCommand is the exec.Cmd of command: held under self when the agent
// knows its own binary, else bash at once; release lets a held one run
// (and closes the gate), and must be called once whatever happens.
func gatedCommand(self, command string) (cmd *exec.Cmd, release func(run bool), err error) {
	if self == "" {
		return exec.Command("/bin/bash", "-c", command), func(bool) {}, nil
	}
	rd, wr, err := os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("exec: gate pipe: %w", err)
	}
	cmd = exec.Command(self, GatedVerb, command)
	cmd.ExtraFiles = []*os.File{rd} // fd 3
	return cmd, func(run bool) {
		_ = rd.Close()
		if run {
			_, _ = wr.Write([]byte{1})
		}
		_ = wr.Close()
	}, nil
}
