// Package proctest makes a package's test run fail when its tests leave a
// process or a goroutine behind. A package whose tests start processes
// (exec.Command, a re-executed test binary, the host's bash running an
// in-sandbox script) calls Main from its TestMain:
//
//	func TestMain(m *testing.M) { proctest.Main(m) }
//
// After the tests pass, Main looks for the processes they started that are
// still alive, waits a moment for any that are dying, and fails the run
// naming each leaked one (and SIGKILLs it, so one leak does not outlive the
// run too). A process counts as started by the tests when its parent chain
// leads to the test binary, or when it carries the run's mark in its
// environment (MarkEnv): the mark survives what the parent chain does not,
// a child that left its group and was orphaned (reparented to init). Then
// it runs goleak's check for goroutines.
//
// A test that gives a child an environment of its own appends Mark() to it,
// so that the child stays recognisable once orphaned.
//
// Containers a test starts are not the test binary's descendants (their
// processes belong to the container runtime) and are not looked at here.
package proctest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// MarkEnv names the environment variable that marks the processes of one
// test run.
const MarkEnv = "SANDGATE_TEST_RUN"

// grace is how long Main waits for processes the tests just killed to exit
// before it calls them leaked.
const grace = 5 * time.Second

// Main runs the tests and exits with Run's code.
func Main(m *testing.M, opts ...goleak.Option) { os.Exit(Run(m, opts...)) }

// Run runs the tests and returns the code to exit with: non-zero when they
// failed, or passed but leaked a process or a goroutine. opts are goleak's,
// for goroutines a dependency keeps on purpose.
func Run(m *testing.M, opts ...goleak.Option) int {
	mark := strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	if err := os.Setenv(MarkEnv, mark); err != nil {
		fmt.Fprintln(os.Stderr, "proctest:", err)
		return 2
	}
	code := m.Run()
	if code != 0 {
		return code
	}
	if err := Check(os.Getpid(), mark, grace); err != nil {
		fmt.Fprintln(os.Stderr, "proctest:", err)
		code = 1
	}
	if err := goleak.Find(opts...); err != nil {
		fmt.Fprintln(os.Stderr, "proctest: goroutines leaked:", err)
		code = 1
	}
	return code
}

// Mark is the MarkEnv entry of this run ("" outside Main), for a child
// started with an environment of its own.
func Mark() string {
	if v, ok := os.LookupEnv(MarkEnv); ok {
		return MarkEnv + "=" + v
	}
	return ""
}

// Check waits up to wait for the live processes descending from root or
// carrying mark to be gone; those still alive then are an error naming
// them, and are SIGKILLed.
func Check(root int, mark string, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		left := Leaked(root, mark)
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			var names []string
			for _, p := range left {
				_ = syscall.Kill(p.Pid, syscall.SIGKILL)
				names = append(names, p.String())
			}
			return fmt.Errorf("%d process(es) started by the tests still running after them (killed now):\n\t%s",
				len(left), strings.Join(names, "\n\t"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Alive reports whether pid runs: it exists and is not a zombie (a killed
// process whose parent has not reaped it runs no more). For a test that
// checks that a process it started was killed.
func Alive(pid int) bool {
	p, err := readStat("/proc/" + strconv.Itoa(pid) + "/stat")
	return err == nil && p.State != "Z" && p.State != "X"
}

// Proc is one process as /proc shows it.
type Proc struct {
	Pid, PPid int
	State     string // R, S, D, Z, …
	Cmdline   string
}

func (p Proc) String() string {
	return fmt.Sprintf("pid %d (parent %d, state %s): %s", p.Pid, p.PPid, p.State, p.Cmdline)
}

// Leaked lists the live (not zombie) processes other than root that descend
// from root or carry mark in their environment.
func Leaked(root int, mark string) []Proc {
	procs := snapshot()
	var out []Proc
	for pid, p := range procs {
		if pid == root || p.State == "Z" || p.State == "X" {
			continue
		}
		if descends(procs, pid, root) || hasMark(pid, mark) {
			p.Cmdline = cmdline(pid)
			out = append(out, p)
		}
	}
	return out
}

// snapshot reads every process's pid, parent and state. Processes that
// exit while it reads are skipped.
func snapshot() map[int]Proc {
	paths, _ := filepath.Glob("/proc/[0-9]*/stat")
	procs := make(map[int]Proc, len(paths))
	for _, path := range paths {
		p, err := readStat(path)
		if err == nil {
			procs[p.Pid] = p
		}
	}
	return procs
}

// readStat parses "pid (comm) state ppid …"; comm may hold spaces and
// parentheses, so the fields after it start after its last ')'.
func readStat(path string) (Proc, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Proc{}, err
	}
	s := string(b)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 1 || end < open {
		return Proc{}, errors.New("malformed stat")
	}
	fields := strings.Fields(s[end+1:])
	if len(fields) < 2 {
		return Proc{}, errors.New("malformed stat")
	}
	pid, err1 := strconv.Atoi(strings.TrimSpace(s[:open]))
	ppid, err2 := strconv.Atoi(fields[1])
	if err := errors.Join(err1, err2); err != nil {
		return Proc{}, err
	}
	return Proc{Pid: pid, PPid: ppid, State: fields[0]}, nil
}

// descends reports whether root is among pid's ancestors.
func descends(procs map[int]Proc, pid, root int) bool {
	for seen := 0; pid > 1 && seen < len(procs); seen++ {
		p, ok := procs[pid]
		if !ok {
			return false
		}
		if p.PPid == root {
			return true
		}
		pid = p.PPid
	}
	return false
}

// hasMark reports whether pid's environment holds MarkEnv=mark. A process
// whose environment cannot be read (another user's) is not ours.
func hasMark(pid int, mark string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	want := MarkEnv + "=" + mark
	for _, kv := range strings.Split(string(b), "\x00") {
		if kv == want {
			return true
		}
	}
	return false
}

func cmdline(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
}
