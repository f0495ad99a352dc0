package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/sandgate/sandgate/adapters/httpapi"
	"github.com/sandgate/sandgate/core/sandbox"
)

// runExec is `executor exec SESSION [--timeout D] -- COMMAND...`. The
// command's words are joined with spaces and run by the sandbox's bash -c,
// as ssh does: `-- 'make && make test'` keeps its shell syntax, and a
// word with spaces needs its own quotes inside. The CLI exits with the
// command's exit code, 124 when it timed out.
func runExec(ctx context.Context, s *Streams, args []string) error {
	fs, c := newFlags("exec", true)
	timeout := fs.Duration("timeout", 0, "kill the command after this long (e.g. 30s; 0: no limit but Ctrl-C)")
	stdin := fs.Bool("i", false, "pass stdin to the command (closed when it ends)")
	tty := fs.Bool("t", false, "run the command on a terminal, interactive")
	fs.BoolVar(tty, "it", false, "same as -t (stdin always passes on a terminal)")
	detach := fs.Bool("d", false, "start the command in the background and print its proc id")
	pos, err := parseArgs(fs, s, args)
	if err != nil {
		return err
	}
	if len(pos) < 2 {
		return usagef("want SESSION -- COMMAND...")
	}
	sid, err := sessionArg(pos[0])
	if err != nil {
		return err
	}
	if *timeout < 0 {
		return usagef("--timeout %s: must not be negative", *timeout)
	}
	cl, err := c.client(s)
	if err != nil {
		return err
	}
	command := joinCommand(pos[1:])
	switch {
	case *detach && (*stdin || *tty || *timeout > 0):
		return usagef("-d starts a background proc: without -i, -t or --timeout (executor kill stops it)")
	case *detach:
		return startDetached(ctx, s, c, cl, sid, command)
	case (*stdin || *tty) && c.json:
		return usagef("-i and -t print the output as it comes: without --json")
	case *stdin || *tty:
		// A proc: exec's one call has no stdin. Only on request, never
		// because stdin happens to be a pipe: a scripted loop's input
		// would be swallowed (ssh's pitfall, which needs ssh -n).
		return runAttached(ctx, s, c, cl, sid, sandbox.ProcStart{Command: command, TTY: *tty}, *timeout)
	}
	req := sandbox.ExecRequest{Command: command, Timeout: *timeout}
	var live *liveOutput
	if !c.json {
		// Live: each piece is written as the command produces it. --json
		// answers one document, so it waits for the result.
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		live = &liveOutput{s: s, cancel: cancel}
		req.Output = live
	}
	res, err := cl.Exec(ctx, sid, req)
	if live != nil && live.err != nil {
		return live.err // our stdout failed (a closed pipe): the command was cancelled
	}
	if err != nil {
		return call{url: c.baseURL(s), sid: sid}.explain(err)
	}
	if err := printExec(s, c.json, res, *timeout); err != nil {
		return err
	}
	return commandExit(res)
}

// liveOutput writes a streamed exec's pieces to the CLI's own streams as
// they arrive. A failed write to stdout (the reader of a pipe went away)
// cancels the exec, as SIGPIPE would stop a local command; stderr is best
// effort.
type liveOutput struct {
	s      *Streams
	cancel context.CancelFunc
	err    error
}

func (l *liveOutput) Output(stream sandbox.Stream, _ int64, data []byte) {
	if stream == sandbox.Stderr {
		_, _ = l.s.Stderr.Write(data)
		return
	}
	if l.err != nil {
		return
	}
	if _, err := l.s.Stdout.Write(data); err != nil {
		l.err = fmt.Errorf("write the output: %w", err)
		l.cancel()
	}
}

// commandExit is the CLI's exit for a finished command: 124 for a timeout,
// the command's code otherwise. A code a process cannot exit with (outside
// 0..255, which os.Exit would wrap, 256 into 0) is a plain failure.
func commandExit(res sandbox.ExecResult) error {
	switch {
	case res.TimedOut:
		return exitError(ExitTimeout)
	case res.ExitCode == 0:
		return nil
	case res.ExitCode < 0 || res.ExitCode > 255:
		return exitError(ExitFailure)
	default:
		return exitError(res.ExitCode)
	}
}

// printExec prints a finished command's result: as JSON, or (its output
// already printed live) what the executor adds to it.
func printExec(s *Streams, asJSON bool, res sandbox.ExecResult, timeout time.Duration) error {
	if asJSON {
		// The API's ExecResult, base64 fields and all: output that is not
		// UTF-8 keeps its exact bytes there.
		return printJSON(s.Stdout, httpapi.NewExecResponse(res))
	}
	if res.Truncated {
		_, _ = fmt.Fprintln(s.Stderr, "executor exec: the output was truncated by the executor")
	}
	switch {
	case res.TimedOut && timeout > 0:
		_, _ = fmt.Fprintf(s.Stderr, "executor exec: the command timed out after %s\n", timeout)
	case res.TimedOut:
		_, _ = fmt.Fprintln(s.Stderr, "executor exec: the command timed out")
	}
	return nil
}
