package sandbox

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// This file emulates an adapter around the host's /bin/bash: it runs an
// ExecArgv as the main process W of a new session (what runc does for an
// exec), measures on its own clock, reads only W's exit status and the
// process group's liveness, and enforces the deadline from outside with
// KillGroupArgv — the evidence ExecEvidence describes. Runs report errors
// instead of failing the test, so that many can run at once from plain
// goroutines: they mostly sleep, and -parallel would run only GOMAXPROCS
// of them at a time.

// runOpts varies how the emulated backend starts W.
type runOpts struct {
	workdir  string // ExecArgv's workdir ("" = the backend sets it: dir)
	dir      string // W's working directory
	noSetsid bool   // start W inside the test's process group
	env      []string
	// bare runs `/bin/bash -c CMD` with stdin from /dev/null instead of
	// ExecArgv: the reference the wrapper must be indistinguishable from.
	bare bool
	// leaveAfter closes the caller's lifeline (W's stdin) after this long,
	// as a caller that goes away does; 0 keeps it open until the run ends.
	leaveAfter time.Duration
	// relay runs W as a job of a parent bash, the exec's main process, and
	// ends the lifeline when that parent exits: the Kubernetes relay under
	// containerd, which closes an exec's stdin when its main process ends.
	relay bool
}

// relayEmulation is the part of the Kubernetes relay the wrapper sees: W is a
// job in a process group of its own, and the relay exits with its status.
// Its own stderr is /dev/null, so that bash's report of a killed job is not
// output.
const relayEmulation = `exec 9>&2 2>/dev/null; set -m; "$@" 2>&9 9>&- & set +m; wait "$!"`

// execRun is what the emulated adapter saw.
type execRun struct {
	ev      ExecEvidence
	res     ExecResult
	pid     int           // W's pid
	hdrPid  int           // the pid the header named
	hdrOK   bool          // whether there was a header
	elapsed time.Duration // until the emulated Exec returned
	err     error         // the harness itself failed
}

// pollEvery is how often the emulated adapter probes W's group.
const pollEvery = 20 * time.Millisecond

// drainWait bounds how long the emulated adapter reads on after W is gone:
// enough for what is buffered even on a loaded machine, never for a
// straggler's EOF.
const drainWait = time.Second

// runConcurrency bounds how many runs runAll starts at once: enough to
// overlap their sleeping, few enough that two cores start them on time.
const runConcurrency = 6

// runAll runs the requests concurrently and returns the runs in order.
// Every straggler is killed when t ends.
func runAll(t *testing.T, reqs []ExecRequest, opts []runOpts) []execRun {
	t.Helper()
	runs := make([]execRun, len(reqs))
	cleanups := make([]func(), len(reqs))
	sem := make(chan struct{}, runConcurrency)
	var wg sync.WaitGroup
	for i := range reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			runs[i], cleanups[i] = runExec(reqs[i], opts[i])
		}()
	}
	wg.Wait()
	for _, c := range cleanups {
		t.Cleanup(c)
	}
	return runs
}

// runOne runs one request and fails t if the harness fails.
func runOne(t *testing.T, req ExecRequest, o runOpts) execRun {
	t.Helper()
	r, cleanup := runExec(req, o)
	t.Cleanup(cleanup)
	require.NoError(t, r.err)
	return r
}

// runExec runs req the way an adapter would and returns what it observed,
// and a cleanup that kills what W's group left behind.
func runExec(req ExecRequest, o runOpts) (execRun, func()) {
	var closers []io.Closer
	cleanup := func() {
		for _, c := range closers {
			_ = c.Close()
		}
	}
	fail := func(err error) (execRun, func()) { return execRun{err: err}, cleanup }
	if err := ValidateExec(req); err != nil {
		return fail(err)
	}
	argv := ExecArgv(req, o.workdir)
	if o.bare {
		argv = []string{"/bin/bash", "-c", req.Command}
	}
	if o.relay {
		argv = append([]string{"/bin/bash", "-c", relayEmulation, "relay"}, argv...)
	}
	deadline := ExecDeadline(req.Timeout)
	var pipes [6]*os.File // out r/w, err r/w, in r/w
	for i := 0; i < 6; i += 2 {
		r, w, err := os.Pipe()
		if err != nil {
			return fail(err)
		}
		pipes[i], pipes[i+1] = r, w
		closers = append(closers, r, w)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = pipes[1], pipes[3]
	if !o.bare {
		cmd.Stdin = pipes[4] // the lifeline: nothing written, open until the caller leaves
	}
	cmd.Dir, cmd.Env = o.dir, o.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: !o.noSetsid}

	stdout, stderr := NewCapture(MaxOutputBytes), NewCapture(MaxOutputBytes)
	hdr := NewHeaderStripper(stderr)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return fail(err)
	}
	pid := cmd.Process.Pid
	cleanup = func() {
		_ = syscall.Kill(-pid, syscall.SIGKILL) // stragglers left in W's group
		if w, ok := hdr.Pid(); ok && o.relay {
			_ = syscall.Kill(-w, syscall.SIGKILL) // under the relay W leads a group of its own
		}
		for _, c := range closers {
			_ = c.Close()
		}
	}
	// The parent's copies of the child's ends, so that EOF can come.
	_, _, _ = pipes[1].Close(), pipes[3].Close(), pipes[4].Close()
	if o.leaveAfter > 0 {
		leave := time.AfterFunc(o.leaveAfter, func() { _ = pipes[5].Close() })
		defer leave.Stop()
	}
	copied := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(stdout, pipes[0]); copied <- struct{}{} }()
	go func() { _, _ = io.Copy(hdr, pipes[2]); _ = hdr.Flush(); copied <- struct{}{} }()
	exited := make(chan int, 1)
	go func() {
		_ = cmd.Wait()
		if o.relay {
			_ = pipes[5].Close()
		}
		exited <- exitCode(cmd.ProcessState)
	}()

	ev, err := watch(start, deadline, exited, hdr)
	drain := time.NewTimer(drainWait)
	defer drain.Stop()
	for n := 0; n < 2; n++ {
		select {
		case <-copied:
		case <-drain.C:
			n = 2
		}
	}
	_ = pipes[5].Close() // the call is over: its lifeline ends, as an adapter's attach closes
	r := execRun{ev: ev, res: NewExecResult(stdout, stderr, ev), pid: pid, elapsed: time.Since(start), err: err}
	r.hdrPid, r.hdrOK = hdr.Pid()
	return r, cleanup
}

// watch is the adapter's deadline logic: wait for W, check its group when it
// died of a signal, and kill the group from outside at deadline +
// EnforceGrace.
func watch(start time.Time, deadline time.Duration, exited <-chan int, hdr *HeaderStripper) (ExecEvidence, error) {
	ev := ExecEvidence{Deadline: deadline}
	if deadline == 0 {
		select {
		case ev.ExitCode = <-exited:
		case <-time.After(10 * time.Second):
			return ev, errors.New("exec without a deadline did not finish")
		}
		ev.Finished = time.Since(start)
		return ev, nil
	}
	enforce := time.NewTimer(time.Until(start.Add(deadline + EnforceGrace)))
	defer enforce.Stop()
	giveUp := time.After(time.Until(start.Add(deadline + ReturnGrace)))
	select {
	case ev.ExitCode = <-exited:
		ev.Finished = time.Since(start)
	case <-enforce.C:
		ev.Enforced = true
		err := killGroup(hdr)
		select {
		case ev.ExitCode = <-exited:
		case <-giveUp:
			ev.ExitCode = ExitKilled
		}
		ev.Finished = time.Since(start)
		return ev, err
	}
	if !NeedsGroupCheck(ev.ExitCode) {
		return ev, nil
	}
	select {
	case <-hdr.Decided():
	case <-enforce.C:
		return ev, errors.New("no header by deadline + EnforceGrace")
	}
	pid, ok := hdr.Pid()
	if !ok {
		return ev, errors.New("a wrapper that died of a signal must have written its header")
	}
	for {
		alive, err := groupAlive(pid)
		if err != nil || !alive {
			ev.Finished = time.Since(start)
			return ev, err
		}
		select {
		case <-enforce.C:
			ev.Enforced = true
			if err := killGroup(hdr); err != nil {
				return ev, err
			}
		case <-giveUp:
			ev.Finished = time.Since(start)
			return ev, nil
		case <-time.After(pollEvery):
		}
	}
}

// exitCode is what a daemon reports for W: its status, or 128+N for signal N.
func exitCode(ps *os.ProcessState) int {
	ws := ps.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}

// killGroup runs KillGroupArgv for the header's pid, as an adapter's extra
// exec would. The group may be gone by then (exit 1).
func killGroup(hdr *HeaderStripper) error {
	select {
	case <-hdr.Decided():
	case <-time.After(time.Second):
	}
	pid, ok := hdr.Pid()
	if !ok {
		return errors.New("enforcing needs the header's pid")
	}
	argv, err := KillGroupArgv(pid)
	if err != nil {
		return err
	}
	code, err := runScript(argv)
	if err == nil && code > 1 {
		err = fmt.Errorf("kill exited %d", code)
	}
	return err
}

// groupAlive runs GroupProbeArgv, as an adapter without `top` would.
func groupAlive(pid int) (bool, error) {
	argv, err := GroupProbeArgv(pid)
	if err != nil {
		return false, err
	}
	code, err := runScript(argv)
	switch {
	case err != nil:
		return false, err
	case code > 1:
		return false, fmt.Errorf("group probe exited %d", code)
	}
	return code == 0, nil
}

// runScript runs argv and returns its exit code.
func runScript(argv []string) (int, error) {
	return runCmd(exec.Command(argv[0], argv[1:]...))
}

// runCmd runs cmd and returns its exit code.
func runCmd(cmd *exec.Cmd) (int, error) {
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), nil
	}
	return 0, err
}

// processLive reports whether pid exists and is not a zombie.
func processLive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	s = s[strings.LastIndex(s, ") ")+2:]
	return s[0] != 'Z' && s[0] != 'X'
}

// sessionMembers lists the live processes of session sid — W's session when
// the emulated backend started W with setsid, as runc starts an exec.
func sessionMembers(t *testing.T, sid int) []int {
	t.Helper()
	var live []int
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	require.NoError(t, err)
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // exited meanwhile
		}
		s := string(b)
		// After "comm) ": state ppid pgrp session …
		fields := strings.Fields(s[strings.LastIndex(s, ") ")+2:])
		if len(fields) < 4 || fields[0] == "Z" || fields[0] == "X" || fields[3] != strconv.Itoa(sid) {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(f, "/proc/"), "/stat"))
		require.NoError(t, err)
		live = append(live, pid)
	}
	return live
}

// requireSession waits up to a second (a SIGKILLed process lingers for a
// moment) until W's session holds exactly want, in /proc's order.
func requireSession(t *testing.T, r execRun, want []int) {
	t.Helper()
	var got []int
	for end := time.Now().Add(time.Second); ; time.Sleep(20 * time.Millisecond) {
		got = sessionMembers(t, r.pid)
		if len(got) == len(want) || time.Now().After(end) {
			break
		}
	}
	require.ElementsMatch(t, want, got, "the exec's session after the call")
}

// requireSessionGone fails unless nothing of W's session is left: not the
// command, not what it started, not the watchdog.
func requireSessionGone(t *testing.T, r execRun) {
	t.Helper()
	requireSession(t, r, nil)
}
