package agentclient

import (
	"context"
	"fmt"
	"io"

	"github.com/sandgate/sandgate/core/sandbox"
)

// ScriptRunner runs one of the core's scripts through the engine (not the
// agent) to completion: stdin (nil: none) copied in, stdout to out (nil
// discards), stderr kept, capped, for classification. err is a transport
// failure, a gone sandbox (sandbox.ErrNotFound) or the context's.
type ScriptRunner func(ctx context.Context, argv []string, stdin io.Reader, out io.Writer) (code int, stderr string, err error)

// MetaScripts is the fallback path's Stat, List, Remove and Mkdir: one
// exec of the core's meta script each, the same on every backend, so a
// backend's fallback embeds it with its own runner.
type MetaScripts struct{ Run ScriptRunner }

// Stat on the fallback path (C-FS-1).
func (m MetaScripts) Stat(ctx context.Context, p string) (sandbox.FileInfo, error) {
	argv, err := sandbox.StatArgs(p)
	if err != nil {
		return sandbox.FileInfo{}, err
	}
	out := sandbox.NewCapture(64 << 10) // one record: a name and a link target
	code, stderr, err := m.Run(ctx, argv, nil, out)
	if err != nil {
		return sandbox.FileInfo{}, fmt.Errorf("stat %q: %w", p, err)
	}
	return sandbox.ParseStat(p, code, stderr, out.Bytes())
}

// List on the fallback path (C-FS-2): at most MaxListBytes of listing are
// kept, whatever the sandbox prints.
func (m MetaScripts) List(ctx context.Context, p string) ([]sandbox.FileInfo, error) {
	argv, err := sandbox.ListArgs(p)
	if err != nil {
		return nil, err
	}
	out := sandbox.NewCapture(sandbox.MaxListBytes)
	code, stderr, err := m.Run(ctx, argv, nil, out)
	if err != nil {
		return nil, fmt.Errorf("list %q: %w", p, err)
	}
	return sandbox.ParseList(p, code, stderr, out.Bytes(), out.Truncated())
}

// Remove on the fallback path (C-FS-3).
func (m MetaScripts) Remove(ctx context.Context, p string, recursive bool) error {
	argv, err := sandbox.RemoveArgs(p, recursive)
	if err != nil {
		return err
	}
	return m.classified(ctx, "remove", p, argv)
}

// Mkdir on the fallback path (C-FS-4).
func (m MetaScripts) Mkdir(ctx context.Context, p string, parents bool) error {
	argv, err := sandbox.MkdirArgs(p, parents)
	if err != nil {
		return err
	}
	return m.classified(ctx, "mkdir", p, argv)
}

func (m MetaScripts) classified(ctx context.Context, op, p string, argv []string) error {
	code, stderr, err := m.Run(ctx, argv, nil, nil)
	if err != nil {
		return fmt.Errorf("%s %q: %w", op, p, err)
	}
	return sandbox.ClassifyMeta(p, code, stderr)
}
