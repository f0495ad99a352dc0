package agent

import (
	"errors"
	"fmt"
	"log"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// A command must not run before its pid has reached the provider: one that
// kills its agent at once (C-EXEC-4's rows do) would otherwise leave the
// provider without the group to follow from outside, and its call without
// a verdict. So each command is held until the agent has written its pid
// event, then released. Two holders, the first that works here is kept:
//
//   - ptrace: the child asks to be traced (PTRACE_TRACEME) and stops at its
//     execve of bash, before bash runs a line; the release detaches it. No
//     process more than the command. Needs ptrace, which a seccomp profile
//     or Yama's ptrace_scope 3 may forbid.
//   - the agent's own binary under GatedVerb, waiting on a pipe (fd 3),
//     which then execs bash in place (same pid, same group). If the agent
//     dies before it lets go, the pipe ends empty and the command never
//     runs. Costs a Go runtime's start per command.
//
// Without its own path (handler tests), commands start at once.

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

// holder starts a command held; release(true) lets it run, release(false)
// ends it unrun. release must be called once, from the goroutine that
// called start (ptrace requests come from the tracing thread).
type holder interface {
	start(command string, setup func(*exec.Cmd)) (cmd *exec.Cmd, release func(run bool), err error)
}

// holder picks the Server's holder: ptrace until it has failed once, then
// the gate pipe; none without the agent's own path.
func (s *Server) holder() holder {
	switch {
	case s.opts.Self == "":
		return direct{}
	case s.opts.NoPtrace || s.noPtrace.Load():
		return pipeHold{self: s.opts.Self}
	}
	return ptraceHold{s: s}
}

// direct starts the command at once.
type direct struct{}

func (direct) start(command string, setup func(*exec.Cmd)) (*exec.Cmd, func(bool), error) {
	cmd := exec.Command("/bin/bash", "-c", command)
	setup(cmd)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	return cmd, func(bool) {}, nil
}

// ptraceHold stops the command at its execve.
type ptraceHold struct{ s *Server }

func (h ptraceHold) start(command string, setup func(*exec.Cmd)) (*exec.Cmd, func(bool), error) {
	runtime.LockOSThread()
	cmd := exec.Command("/bin/bash", "-c", command)
	setup(cmd)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Ptrace: true}
	if err := cmd.Start(); err != nil {
		runtime.UnlockOSThread()
		if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.ENOSYS) {
			h.s.noPtrace.Store(true) // forbidden here: the pipe from now on
			return pipeHold{self: h.s.opts.Self}.start(command, setup)
		}
		return nil, nil, err
	}
	pid := cmd.Process.Pid
	var ws unix.WaitStatus
	_, err := unix.Wait4(pid, &ws, unix.WALL, nil)
	if err == nil && (!ws.Stopped() || ws.StopSignal() != unix.SIGTRAP) {
		err = fmt.Errorf("status %v", ws)
	}
	if err == nil {
		// Should the agent die before the release, the kernel kills the
		// command instead of detaching it (which would let it run unseen).
		err = unix.PtraceSetOptions(pid, unix.PTRACE_O_EXITKILL)
	}
	if err != nil {
		// Not the exec stop (a signal came first, or it is gone): it never
		// runs unheld — killed, let go and reaped here.
		_ = unix.Kill(pid, unix.SIGKILL)
		_ = unix.PtraceDetach(pid)
		_ = cmd.Wait()
		runtime.UnlockOSThread()
		return nil, nil, fmt.Errorf("exec: holding the command: %w", err)
	}
	return cmd, func(run bool) {
		if !run {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
		_ = unix.PtraceDetach(pid)
		runtime.UnlockOSThread()
	}, nil
}

// pipeHold holds the command under the agent's binary (RunGated).
type pipeHold struct{ self string }

func (h pipeHold) start(command string, setup func(*exec.Cmd)) (*exec.Cmd, func(bool), error) {
	rd, wr, err := os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("exec: gate pipe: %w", err)
	}
	cmd := exec.Command(h.self, GatedVerb, command)
	setup(cmd)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.ExtraFiles = []*os.File{rd} // fd 3
	err = cmd.Start()
	_ = rd.Close()
	if err != nil {
		_ = wr.Close()
		return nil, nil, err
	}
	var once sync.Once
	return cmd, func(run bool) {
		once.Do(func() {
			if run {
				_, _ = wr.Write([]byte{1})
			}
			_ = wr.Close()
		})
	}, nil
}
