package cli

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sandgate/sandgate/adapters/httpapi"
	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
)

// procArgs parses SESSION PROC.
func procArgs(pos []string) (domain.ID, string, error) {
	if err := exactArgs(pos, "SESSION", "PROC"); err != nil {
		return domain.ID{}, "", err
	}
	sid, err := sessionArg(pos[0])
	return sid, pos[1], err
}

// runPs is `executor ps SESSION`: the session's procs, oldest first.
func runPs(ctx context.Context, s *Streams, args []string) error {
	fs, c := newFlags("ps", true)
	pos, err := parseArgs(fs, s, args)
	if err != nil {
		return err
	}
	if err := exactArgs(pos, "SESSION"); err != nil {
		return err
	}
	sid, err := sessionArg(pos[0])
	if err != nil {
		return err
	}
	cl, err := c.client(s)
	if err != nil {
		return err
	}
	list, err := cl.Procs(sid).Procs(ctx)
	if err != nil {
		return call{url: c.baseURL(s), sid: sid}.explain(err)
	}
	if c.json {
		out := httpapi.ProcList{Procs: []httpapi.ProcInfo{}}
		for _, p := range list {
			out.Procs = append(out.Procs, httpapi.NewProcInfo(p))
		}
		return printJSON(s.Stdout, out)
	}
	tw := tabwriter.NewWriter(s.Stdout, 0, 4, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "PROC\tPID\tSTATE\tEXIT\tSTARTED\tCOMMAND")
	for _, p := range list {
		exit := "-"
		if p.State == sandbox.ProcExited {
			exit = fmt.Sprint(p.ExitCode)
		}
		_, _ = fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", p.ID, p.Pid, p.State, exit,
			p.StartedAt.UTC().Format(time.DateTime), oneLine(p.Command))
	}
	return tw.Flush()
}

// oneLine is a command on one table line: newlines shown as ⏎, at most 60
// runes.
func oneLine(cmd string) string {
	cmd = strings.ReplaceAll(cmd, "\n", "⏎")
	if r := []rune(cmd); len(r) > 60 {
		return string(r[:59]) + "…"
	}
	return cmd
}

// runLogs is `executor logs [-f] [--from N] [--stream S] SESSION PROC`:
// the proc's output from its ring, stdout to stdout and stderr to stderr;
// -f follows it until the proc ends. Bytes the ring no longer held are
// said on stderr.
func runLogs(ctx context.Context, s *Streams, args []string) error {
	fs, c := newFlags("logs", false)
	follow := fs.Bool("f", false, "follow the output until the proc ends")
	from := fs.Int64("from", 0, "start at this byte offset of each stream")
	stream := fs.String("stream", "", "only stdout or stderr")
	pos, err := parseArgs(fs, s, args)
	if err != nil {
		return err
	}
	sid, id, err := procArgs(pos)
	if err != nil {
		return err
	}
	cl, err := c.client(s)
	if err != nil {
		return err
	}
	q := sandbox.ProcOutputQuery{Stream: *stream, From: *from, Follow: *follow}
	_, err = cl.Procs(sid).ProcOutput(ctx, id, q, func(ch sandbox.ProcChunk) error {
		if ch.Dropped > 0 {
			_, _ = fmt.Fprintf(s.Stderr, "executor logs: %d bytes of %s before offset %d are no longer kept\n", ch.Dropped, ch.Stream, ch.Offset)
		}
		if ch.Stream == sandbox.StreamStderr {
			_, _ = s.Stderr.Write(ch.Data)
			return nil
		}
		_, err := s.Stdout.Write(ch.Data)
		return err
	})
	if err != nil {
		return call{url: c.baseURL(s), sid: sid}.explain(err)
	}
	return nil
}

// runKill is `executor kill [-s SIGNAL] [--rm] SESSION PROC`: a signal to
// the proc's process group (TERM by default); --rm kills it and forgets it.
func runKill(ctx context.Context, s *Streams, args []string) error {
	fs, c := newFlags("kill", false)
	sig := fs.String("s", "TERM", "the signal: "+strings.Join(sandbox.ProcSignals, ", "))
	remove := fs.Bool("rm", false, "kill the proc's group and forget the proc (its output too)")
	pos, err := parseArgs(fs, s, args)
	if err != nil {
		return err
	}
	sid, id, err := procArgs(pos)
	if err != nil {
		return err
	}
	name := strings.TrimPrefix(strings.ToUpper(*sig), "SIG")
	if err := sandbox.ValidateProcSignal(name); err != nil {
		return usagef("-s %s: not one of %s", *sig, strings.Join(sandbox.ProcSignals, ", "))
	}
	cl, err := c.client(s)
	if err != nil {
		return err
	}
	if *remove {
		err = cl.Procs(sid).RemoveProc(ctx, id)
	} else {
		err = cl.Procs(sid).SignalProc(ctx, id, name)
	}
	if err != nil {
		return call{url: c.baseURL(s), sid: sid}.explain(err)
	}
	return nil
}

// startDetached is `executor exec -d`: the command runs as a proc of the
// session; its id is printed (the proc with --json).
func startDetached(ctx context.Context, s *Streams, c *common, cl *httpapi.Client, sid domain.ID, command string) error {
	p, err := cl.Procs(sid).StartProc(ctx, sandbox.ProcStart{Command: command})
	if err != nil {
		return call{url: c.baseURL(s), sid: sid}.explain(err)
	}
	if c.json {
		return printJSON(s.Stdout, httpapi.NewProcInfo(p))
	}
	_, err = fmt.Fprintln(s.Stdout, p.ID)
	return err
}
