package cli

import (
	"context"
	"fmt"
)

// runRm is `executor rm SESSION [--checkpoint]`.
func runRm(ctx context.Context, s *Streams, args []string) error {
	fs, c := newFlags("rm", true)
	checkpoint := fs.Bool("checkpoint", false, "keep the workspace: checkpoint the workdir first (without a sandbox, keep the stored checkpoint); without it the checkpoint is deleted")
	sid, err := sessionOnly(fs, s, args)
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

// runLs is `executor ls [--json]`.
func runLs(ctx context.Context, s *Streams, args []string) error {
	fs, c := newFlags("ls", true)
	pos, err := parseArgs(fs, s, args)
	if err != nil {
		return err
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
