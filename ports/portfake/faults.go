package portfake

import (
	"context"
	"sync"

	"github.com/sandgate/sandgate/core/domain"
)

// Op names one method of ports.Provider or ports.Sandbox, for counting its
// calls, failing it or hooking it.
type Op string

// The operations of the Provider and of its sandboxes.
const (
	OpProvision       Op = "Provision"
	OpAttach          Op = "Attach"
	OpOwned           Op = "Owned"
	OpReap            Op = "Reap"
	OpExport          Op = "Export"
	OpExec            Op = "Exec"
	OpReadFile        Op = "ReadFile"
	OpReadFileStream  Op = "ReadFileStream"
	OpWriteFile       Op = "WriteFile"
	OpWriteFileStream Op = "WriteFileStream"
	OpWriteFiles      Op = "WriteFiles"
	OpStat            Op = "Stat"
	OpList            Op = "List"
	OpRemove          Op = "Remove"
	OpMkdir           Op = "Mkdir"
	OpDialPort        Op = "DialPort"
	OpDestroy         Op = "Destroy"
)

// Hook runs when an operation is entered, with the call's context and
// session (the zero ID for Owned); a non-nil error is what the call returns.
type Hook func(ctx context.Context, sid domain.ID) error

// fault is an injected error and how many more calls it fails (< 0: every
// call until cleared).
type fault struct {
	err  error
	left int
}

// faults holds the injected errors, hooks and call counts of a Provider and
// its sandboxes. Its methods are safe for concurrent use.
type faults struct {
	mu    sync.Mutex
	fail  map[Op]*fault
	hooks map[Op]Hook
	calls map[Op]int
}

func newFaults() *faults {
	return &faults{fail: map[Op]*fault{}, hooks: map[Op]Hook{}, calls: map[Op]int{}}
}

// enter counts a call of op, runs its hook (outside the lock: a hook may
// block) and returns the error the call must answer, if any: the hook's
// first, else an injected fault's.
func (f *faults) enter(ctx context.Context, op Op, sid domain.ID) error {
	f.mu.Lock()
	f.calls[op]++
	hook := f.hooks[op]
	f.mu.Unlock()
	if hook != nil {
		if err := hook(ctx, sid); err != nil {
			return err
		}
	}
	return f.take(op)
}

// take consumes one failure of op, if one is pending.
func (f *faults) take(op Op) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	ft := f.fail[op]
	if ft == nil {
		return nil
	}
	if ft.left > 0 {
		ft.left--
		if ft.left == 0 {
			delete(f.fail, op)
		}
	}
	return ft.err
}

func (f *faults) set(op Op, n int, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err == nil || n == 0 {
		delete(f.fail, op)
		return
	}
	f.fail[op] = &fault{err: err, left: n}
}

func (f *faults) hook(op Op, h Hook) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if h == nil {
		delete(f.hooks, op)
		return
	}
	f.hooks[op] = h
}

func (f *faults) count(op Op) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[op]
}

// Gate holds the calls it is hooked into until it is released: each call
// announces its session on Entered, then waits for Release or for its
// context, whose end it reports on Cancelled and returns.
type Gate struct {
	entered   chan domain.ID
	release   chan struct{}
	cancelled chan struct{}
	once      sync.Once
	cancel    sync.Once
}

// gateBacklog bounds the announcements nobody has read yet; a call past it
// is held all the same but not announced, so a test that stopped reading
// (or a reaper ticking after the release) never blocks on Entered.
const gateBacklog = 1024

// NewGate returns a closed gate.
func NewGate() *Gate {
	return &Gate{
		entered: make(chan domain.ID, gateBacklog), release: make(chan struct{}), cancelled: make(chan struct{}),
	}
}

// Entered yields the session of each call that reached the gate.
func (g *Gate) Entered() <-chan domain.ID { return g.entered }

// Release lets every held call and every later one through; releasing
// twice is not an error.
func (g *Gate) Release() { g.once.Do(func() { close(g.release) }) }

// Cancelled is closed once a held call's context ended before the release.
func (g *Gate) Cancelled() <-chan struct{} { return g.cancelled }

// Hook is the gate as a Hook, for Provider.Hook.
func (g *Gate) Hook(ctx context.Context, sid domain.ID) error {
	select {
	case g.entered <- sid:
	default:
	}
	select {
	case <-g.release:
		return nil
	case <-ctx.Done():
		g.cancel.Do(func() { close(g.cancelled) })
		return ctx.Err()
	}
}
