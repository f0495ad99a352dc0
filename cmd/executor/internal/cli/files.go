package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/sandgate/sandgate/adapters/httpapi"
	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
)

// The file commands of issue 13: `ls SESSION:/path`, `stat`, `rm [-r]
// SESSION:/path` and `mkdir [-p]`, the path glued to its session as in cp.
// ls and rm keep their session meaning for a bare SESSION (rm.go), so an
// older command line does what it did — and a path cannot go missing by
// accident: `rm s1 /w` is a usage error, never the removal of session s1.

// pathTarget parses SESSION:/path and returns the client to call with it.
func pathTarget(s *Streams, c *common, pos []string) (*httpapi.Client, domain.ID, string, error) {
	if err := exactArgs(pos, "SESSION:/path"); err != nil {
		return nil, domain.ID{}, "", err
	}
	r, ok := parseRemote(pos[0])
	if !ok {
		return nil, domain.ID{}, "", usagef("%q is not SESSION:/path (a session id, a colon and an absolute path)", pos[0])
	}
	cl, err := c.client(s)
	return cl, r.sid, r.path, err
}

// runListDir is `executor ls SESSION:/path`: one line per entry, or
// {"entries":[…]} (the API's shape) with --json.
func runListDir(ctx context.Context, s *Streams, c *common, pos []string) error {
	cl, sid, p, err := pathTarget(s, c, pos)
	if err != nil {
		return err
	}
	infos, err := cl.ListDir(ctx, sid, p)
	if err != nil {
		return c.explain(s, sid, p, err, "")
	}
	if c.json {
		return printJSON(s.Stdout, httpapi.NewFileList(infos))
	}
	for _, fi := range infos {
		if _, err := fmt.Fprintln(s.Stdout, entryLine(fi)); err != nil {
			return err
		}
	}
	return nil
}

// runStat is `executor stat SESSION:/path [--json]`.
func runStat(ctx context.Context, s *Streams, args []string) error {
	fset, c := newFlags("stat", true)
	pos, err := parseArgs(fset, s, args)
	if err != nil {
		return err
	}
	cl, sid, p, err := pathTarget(s, c, pos)
	if err != nil {
		return err
	}
	fi, err := cl.Stat(ctx, sid, p)
	if err != nil {
		return c.explain(s, sid, p, err, "")
	}
	if c.json {
		return printJSON(s.Stdout, httpapi.NewFileInfo(fi))
	}
	return printStat(s.Stdout, fi)
}

// runRemovePath is `executor rm [-r] SESSION:/path`.
func runRemovePath(ctx context.Context, s *Streams, c *common, pos []string, recursive bool) error {
	cl, sid, p, err := pathTarget(s, c, pos)
	if err != nil {
		return err
	}
	if err := cl.Remove(ctx, sid, p, recursive); err != nil {
		return c.explain(s, sid, p, err, "{path} is a non-empty directory in session {sid} (rm -r removes it with everything under it)")
	}
	if c.json {
		return printJSON(s.Stdout, map[string]any{"id": sid, "path": p, "removed": true})
	}
	_, err = fmt.Fprintf(s.Stdout, "removed %s from session %s\n", display(p), sid)
	return err
}

// runMkdir is `executor mkdir [-p] SESSION:/path`.
func runMkdir(ctx context.Context, s *Streams, args []string) error {
	fset, c := newFlags("mkdir", true)
	parents := fset.Bool("p", false, "make missing parents too; an existing directory is then no error (mkdir -p)")
	pos, err := parseArgs(fset, s, args)
	if err != nil {
		return err
	}
	cl, sid, p, err := pathTarget(s, c, pos)
	if err != nil {
		return err
	}
	if err := cl.Mkdir(ctx, sid, p, *parents); err != nil {
		return c.explain(s, sid, p, err, "{path} already exists in session {sid} (mkdir -p accepts an existing directory)")
	}
	if c.json {
		return printJSON(s.Stdout, map[string]any{"id": sid, "path": p, "made": true})
	}
	_, err = fmt.Fprintf(s.Stdout, "made directory %s in session %s\n", display(p), sid)
	return err
}

// explain is call.explain with the advice for is_directory replaced by
// isDir when given: what that code means depends on the command.
func (c *common) explain(s *Streams, sid domain.ID, p string, err error, isDir string) error {
	var ae *httpapi.APIError
	if isDir != "" && errors.As(err, &ae) && ae.Code == httpapi.CodeIsDirectory {
		return errors.New(strings.NewReplacer("{path}", display(p), "{sid}", sid.String()).Replace(isDir))
	}
	return call{url: c.baseURL(s), sid: sid, path: display(p)}.explain(err)
}

// entryLine is one line of ls: mode, size, modification time (UTC), name,
// and a symlink's target.
func entryLine(fi sandbox.FileInfo) string {
	line := fmt.Sprintf("%s %10d %s %s", modeString(fi), fi.Size, fi.ModTime.UTC().Format("2006-01-02 15:04"), display(fi.Name))
	if fi.Type == sandbox.TypeSymlink {
		line += " -> " + display(fi.LinkTarget)
	}
	return line
}

// printStat prints stat's block for people.
func printStat(w io.Writer, fi sandbox.FileInfo) error {
	rows := [][2]string{
		{"path", display(fi.Name)}, {"type", string(fi.Type)}, {"size", strconv.FormatInt(fi.Size, 10)},
		{"mode", fmt.Sprintf("%04o %s", fi.Mode, modeString(fi))},
		{"modified", fi.ModTime.UTC().Format("2006-01-02 15:04:05.000000000 UTC")},
	}
	if fi.Type == sandbox.TypeSymlink {
		rows = append(rows, [2]string{"target", display(fi.LinkTarget)})
	}
	for _, r := range rows {
		if _, err := fmt.Fprintf(w, "%-9s %s\n", r[0], r[1]); err != nil {
			return err
		}
	}
	return nil
}

// modeString is ls -l's mode column ("drwxr-xr-x", "-rwsr-x--x"); the
// kind of an "other" file is not known, so it shows as "?".
func modeString(fi sandbox.FileInfo) string {
	m := fs.FileMode(fi.Mode & 0o777)
	if fi.Mode&0o4000 != 0 {
		m |= fs.ModeSetuid
	}
	if fi.Mode&0o2000 != 0 {
		m |= fs.ModeSetgid
	}
	if fi.Mode&0o1000 != 0 {
		m |= fs.ModeSticky
	}
	kind := map[sandbox.FileType]byte{sandbox.TypeFile: '-', sandbox.TypeDir: 'd', sandbox.TypeSymlink: 'l'}[fi.Type]
	if kind == 0 {
		kind = '?'
	}
	b := []byte(m.Perm().String())
	b[0] = kind
	setBit := func(i int, on bool, with, without byte) {
		if on {
			b[i] = map[bool]byte{true: with, false: without}[b[i] == 'x']
		}
	}
	setBit(3, m&fs.ModeSetuid != 0, 's', 'S')
	setBit(6, m&fs.ModeSetgid != 0, 's', 'S')
	setBit(9, m&fs.ModeSticky != 0, 't', 'T')
	return string(b)
}

// display shows a name for people: as it is when it is printable UTF-8,
// Go-quoted otherwise, so a newline or an escape sequence in a sandbox's
// file name can neither forge a line nor drive the terminal.
func display(s string) string {
	if utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) {
		return s
	}
	return strconv.Quote(s)
}
