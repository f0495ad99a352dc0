package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
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
	res, err := cl.Exec(ctx, sid, sandbox.ExecRequest{Command: strings.Join(pos[1:], " "), Timeout: *timeout})
	if err != nil {
		return call{url: c.baseURL(s), sid: sid}.explain(err)
	}
	if err := printExec(s, c.json, res, *timeout); err != nil {
		return err
	}
	return commandExit(res)
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

func printExec(s *Streams, asJSON bool, res sandbox.ExecResult, timeout time.Duration) error {
	if asJSON {
		// The API's ExecResult, base64 fields and all: output that is not
		// UTF-8 keeps its exact bytes there.
		return printJSON(s.Stdout, httpapi.NewExecResponse(res))
	}
	if _, err := io.WriteString(s.Stdout, res.Stdout); err != nil {
		return err
	}
	_, _ = io.WriteString(s.Stderr, res.Stderr)
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
