package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/sandgate/sandgate/adapters/httpapi"
	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
)

// defaultShell is what `executor shell` runs: the sandbox's bash, which is
// interactive on its terminal.
const defaultShell = "exec bash"

// runShell is `executor shell SESSION [-- COMMAND...]`: an interactive
// terminal in the sandbox (exec -it).
func runShell(ctx context.Context, s *Streams, args []string) error {
	fs, c := newFlags("shell", false)
	pos, err := parseArgs(fs, s, args)
	if err != nil {
		return err
	}
	if len(pos) < 1 {
		return usagef("want SESSION [-- COMMAND...]")
	}
	sid, err := sessionArg(pos[0])
	if err != nil {
		return err
	}
	command := defaultShell
	if len(pos) > 1 {
		command = joinCommand(pos[1:])
	}
	cl, err := c.client(s)
	if err != nil {
		return err
	}
	return runAttached(ctx, s, c, cl, sid, sandbox.ProcStart{Command: command, TTY: true}, 0)
}

func joinCommand(words []string) string { return strings.Join(words, " ") }

// runAttached runs start as a proc attached to this process: its output
// to stdout (and stderr, without a terminal), stdin passed through (then
// closed, without a terminal), the exit code kept. With TTY it is
// interactive: raw mode while it runs (restored on every path) and the
// window size followed (SIGWINCH). A timeout kills it (exit 124). The proc
// is removed once it ended; a CLI that is interrupted hangs it up (HUP, as
// ssh does) and leaves it to `executor ps`.
func runAttached(ctx context.Context, s *Streams, c *common, cl *httpapi.Client, sid domain.ID, start sandbox.ProcStart, timeout time.Duration) error {
	if start.TTY {
		start.Cols, start.Rows = s.termSize()
	}
	procs := cl.Procs(sid)
	p, err := procs.StartProc(ctx, start)
	if err != nil {
		return call{url: c.baseURL(s), sid: sid}.explain(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	att, err := cl.AttachProc(ctx, sid, p.ID, 0)
	if err != nil {
		return call{url: c.baseURL(s), sid: sid}.explain(err)
	}
	defer func() { _ = att.Close() }()
	restore := func() {}
	if start.TTY {
		if restore, err = s.rawMode(); err != nil {
			return err
		}
		defer restore()
		defer s.followWindow(att)()
	}
	go func() {
		// Stdin until it ends (a read of the CLI's own stdin cannot be
		// interrupted; the process exits after this returns). A terminal's
		// ^D travels as a byte to the sandbox's terminal, which ends its
		// shell; a pipe's end closes the proc's stdin.
		_, _ = io.Copy(att, s.Stdin)
		if !start.TTY {
			_ = att.CloseStdin()
		}
	}()
	var timedOut atomic.Bool
	if timeout > 0 {
		t := time.AfterFunc(timeout, func() {
			timedOut.Store(true)
			_ = att.Signal("KILL")
		})
		defer t.Stop()
	}
	end, err := att.Output(func(stream string, data []byte) error {
		if stream == sandbox.StreamStderr {
			_, _ = s.Stderr.Write(data)
			return nil
		}
		_, err := s.Stdout.Write(data)
		return err
	})
	restore()
	if err != nil {
		if errors.Is(err, context.Canceled) {
			_ = procs.SignalProc(context.WithoutCancel(ctx), p.ID, "HUP")
		}
		return call{url: c.baseURL(s), sid: sid}.explain(err)
	}
	_ = procs.RemoveProc(ctx, p.ID)
	return commandExit(sandbox.ExecResult{ExitCode: end.ExitCode, TimedOut: timedOut.Load()})
}

// termSize is the CLI's terminal size (0, 0: the agent's default).
func (s *Streams) termSize() (cols, rows int) {
	if s.Terminal == nil {
		return 0, 0
	}
	cols, rows, err := term.GetSize(int(s.Terminal.Fd()))
	if err != nil || cols < 1 || rows < 1 || cols > sandbox.MaxTermSize || rows > sandbox.MaxTermSize {
		return 0, 0
	}
	return cols, rows
}

// rawMode puts the CLI's terminal in raw mode; restore (idempotent) puts
// it back. Without a terminal both do nothing.
func (s *Streams) rawMode() (restore func(), err error) {
	if s.Terminal == nil {
		return func() {}, nil
	}
	fd := int(s.Terminal.Fd())
	old, err := term.MakeRaw(fd)
	if err != nil {
		return nil, fmt.Errorf("raw mode: %w", err)
	}
	done := false
	return func() {
		if !done {
			done = true
			_ = term.Restore(fd, old)
		}
	}, nil
}

// followWindow resizes the proc's terminal whenever the CLI's changes.
func (s *Streams) followWindow(att *httpapi.Attachment) (stop func()) {
	if s.Terminal == nil {
		return func() {}
	}
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-winch:
				if cols, rows := s.termSize(); cols > 0 {
					_ = att.Resize(cols, rows)
				}
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(winch)
		close(done)
	}
}
