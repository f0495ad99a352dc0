package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/sandgate/sandgate/adapters/httpapi"
	"github.com/sandgate/sandgate/core/domain"
)

// remote is the SESSION:/path side of a cp.
type remote struct {
	sid  domain.ID
	path string
}

// parseRemote reports whether arg is SESSION:/path: a valid session id, a
// colon and an absolute path. Anything else is local (write ./a:/b for a
// local file whose name looks remote).
func parseRemote(arg string) (remote, bool) {
	s, p, ok := strings.Cut(arg, ":")
	if !ok || !strings.HasPrefix(p, "/") {
		return remote{}, false
	}
	sid, err := domain.ParseSessionID(s)
	if err != nil {
		return remote{}, false
	}
	return remote{sid, p}, true
}

// isRemote reports whether arg is SESSION:/path.
func isRemote(arg string) bool {
	_, ok := parseRemote(arg)
	return ok
}

// cpJSON is cp's --json output.
type cpJSON struct {
	Source      string `json:"source"`
	Destination string `json:"destination"`
	Bytes       int64  `json:"bytes"`
}

// runCp is `executor cp SRC DST`, one side SESSION:/path and the other a
// local path or "-" (stdin or stdout). Uploads stream with their size
// (WriteFile) and downloads with theirs (ReadFile); either draws a progress
// bar on a terminal stderr past progressThreshold.
func runCp(ctx context.Context, s *Streams, args []string) error {
	fs, c := newFlags("cp", true)
	pos, err := parseArgs(fs, s, args)
	if err != nil {
		return err
	}
	if err := exactArgs(pos, "SRC", "DST"); err != nil {
		return err
	}
	from, fromRemote := parseRemote(pos[0])
	to, toRemote := parseRemote(pos[1])
	if fromRemote == toRemote {
		return usagef("exactly one of SRC and DST must be SESSION:/path")
	}
	if c.json && pos[1] == "-" {
		return usagef("--json with DST -: stdout carries the file")
	}
	cl, err := c.client(s)
	if err != nil {
		return err
	}
	var n int64
	dst := pos[1]
	if toRemote {
		n, err = upload(ctx, s, cl, pos[0], &to)
		err = call{url: c.baseURL(s), sid: to.sid, path: to.path}.explain(err)
		dst = to.sid.String() + ":" + to.path
	} else {
		n, dst, err = download(ctx, s, cl, from, dst)
		err = call{url: c.baseURL(s), sid: from.sid, path: from.path}.explain(err)
	}
	if err != nil || !c.json {
		return err
	}
	return printJSON(s.Stdout, cpJSON{Source: pos[0], Destination: dst, Bytes: n})
}

func upload(ctx context.Context, s *Streams, cl *httpapi.Client, src string, to *remote) (int64, error) {
	if strings.HasSuffix(to.path, "/") {
		if src == "-" {
			return 0, usagef("DST %s: name the file when SRC is -", to.path)
		}
		to.path = path.Join(to.path, filepath.Base(src))
	}
	r, size, cleanup, err := openUpload(src, s.Stdin, httpapi.DefaultMaxStreamBytes)
	if err != nil {
		return 0, err
	}
	defer cleanup()
	bar := newProgress(s, "upload", size)
	err = cl.WriteFile(ctx, to.sid, to.path, bar.reader(r), size)
	bar.end()
	return size, err
}

// download copies from to dst and returns the bytes and the path written
// (dst, or a file in it when dst is a directory).
func download(ctx context.Context, s *Streams, cl *httpapi.Client, from remote, dst string) (int64, string, error) {
	if dst != "-" {
		if st, err := os.Stat(dst); err == nil && st.IsDir() {
			dst = filepath.Join(dst, path.Base(from.path))
		}
	}
	rc, size, err := cl.ReadFile(ctx, from.sid, from.path, httpapi.DefaultMaxStreamBytes)
	if err != nil {
		return 0, dst, err
	}
	defer func() { _ = rc.Close() }()
	bar := newProgress(s, "download", size)
	defer bar.end()
	src := bar.reader(rc)
	var n int64
	if dst == "-" {
		if n, err = io.Copy(s.Stdout, src); err == nil {
			err = sizeCheck(size)(n)
		}
	} else {
		n, err = writeLocal(dst, src, sizeCheck(size))
	}
	if err != nil {
		return n, dst, fmt.Errorf("download of %s:%s broke after %d of %d bytes: %w", from.sid, from.path, n, size, err)
	}
	return n, dst, nil
}
