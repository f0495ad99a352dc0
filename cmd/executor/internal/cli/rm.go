package cli

import (
	"context"
	"fmt"
)

// runRm is `executor rm SESSION [--checkpoint]`, or `executor rm [-r]
// SESSION:/path` (files.go).
func runRm(ctx context.Context, s *Streams, args []string) error {
	fs, c := newFlags("rm", true)
	checkpoint := fs.Bool("checkpoint", false, "keep the workspace: checkpoint the workdir first (without a sandbox, keep the stored checkpoint); without it the checkpoint is deleted")
	recursive := fs.Bool("r", false, "with a PATH: remove a directory and everything under it")
	pos, err := parseArgs(fs, s, args)
	if err != nil {
		return err
	}
	isPath := len(pos) == 1 && isRemote(pos[0])
	switch {
	case isPath && *checkpoint:
		return usagef("--checkpoint applies to a session, not to a path")
	case isPath:
		return runRemovePath(ctx, s, c, pos, *recursive)
	case *recursive:
		return usagef("-r removes a path: rm -r SESSION:/path")
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
	if err := cl.Delete(ctx, sid, *checkpoint); err != nil {
		return call{url: c.baseURL(s), sid: sid}.explain(err)
	}
	if c.json {
		return printJSON(s.Stdout, map[string]any{"id": sid, "removed": true, "checkpoint": *checkpoint})
	}
	_, err = fmt.Fprintf(s.Stdout, "removed session %s\n", sid)
	return err
}

// runLs is `executor ls [--json]`, the sessions, or `executor ls
// SESSION:/path`, a directory (files.go).
func runLs(ctx context.Context, s *Streams, args []string) error {
	fs, c := newFlags("ls", true)
	pos, err := parseArgs(fs, s, args)
	if err != nil {
		return err
	}
	if len(pos) == 1 {
		return runListDir(ctx, s, c, pos)
	}
	if err := exactArgs(pos); err != nil {
		return err
	}
	cl, err := c.client(s)
	if err != nil {
		return err
	}
	infos, err := cl.List(ctx)
	if err != nil {
		return call{url: c.baseURL(s)}.explain(err)
	}
	return printSessions(s.Stdout, c.json, infos)
}
