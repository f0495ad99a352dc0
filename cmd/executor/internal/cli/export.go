package cli

import (
	"context"
	"io"

	"github.com/sandgate/sandgate/core/sandbox"
)

// runExport is `executor export SESSION [--root DIR] [-o FILE]`: the tar
// of DIR (members under its base name) to stdout or FILE. A terminal stdout
// is refused: a tar is no text for people.
func runExport(ctx context.Context, s *Streams, args []string) error {
	fs, c := newFlags("export", false)
	root := fs.String("root", sandbox.DefaultWorkdir, "the directory to export")
	out := fs.String("o", "", "write the tar to this file (default stdout)")
	sid, err := sessionOnly(fs, s, args)
	if err != nil {
		return err
	}
	if *out == "" && s.StdoutIsTerminal {
		return usagef("stdout is a terminal: redirect it (> x.tar) or give -o FILE")
	}
	cl, err := c.client(s)
	if err != nil {
		return err
	}
	explain := call{url: c.baseURL(s), sid: sid, path: *root}.explain
	rc, err := cl.Export(ctx, sid, *root)
	if err != nil {
		return explain(err)
	}
	defer func() { _ = rc.Close() }()
	if *out == "" {
		_, err = io.Copy(s.Stdout, rc)
	} else {
		_, err = writeLocal(*out, rc, func(int64) error { return nil })
	}
	return explain(err)
}
