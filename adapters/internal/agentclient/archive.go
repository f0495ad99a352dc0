package agentclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	neturl "net/url"
	pathpkg "path"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/sandgate/sandgate/core/agentwire"
	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
)

// Archive is a backend's bulk transport: an endpoint of the engine that
// moves tar archives in and out of the sandbox faster than the agent's
// stream for a large body (Docker's archive endpoint). It runs as root in
// the engine, so the Plane never lets it decide anything: the agent checks
// every path as the sandbox's user before it is called, and the archive's
// header is checked again after (sandbox.OpenArchived).
type Archive interface {
	// Put extracts the tar body into the directory dir, the members owned
	// by the sandbox's user. A body that fails fails the call.
	Put(ctx context.Context, dir string, body io.Reader) error
	// Get answers a tar stream of path, the final symlink not followed:
	// sandbox.ErrFileNotExist when path is gone, sandbox.ErrNotFound when
	// the sandbox is.
	Get(ctx context.Context, path string) (io.ReadCloser, error)
}

// ArchiveRule says which bodies go through a Plane's Archive: a backend
// measures where its archive endpoint, which costs a fixed latency per
// call, overtakes the agent's stream.
type ArchiveRule struct {
	// ReadAbove and WriteAbove: a file read or a body written above this
	// many bytes.
	ReadAbove, WriteAbove int64
	// BulkFrom and BulkAbove: a WriteFiles batch of at least BulkFrom
	// members, or of more than BulkAbove bytes in all.
	BulkFrom  int
	BulkAbove int64
}

// bulk reports whether the batch goes through the archive.
func (r ArchiveRule) bulk(files []sandbox.FileWrite) bool {
	if len(files) >= r.BulkFrom {
		return true
	}
	var n int64
	for _, f := range files {
		n += int64(len(f.Data))
	}
	return n > r.BulkAbove
}

// discardTimeout bounds the removal of a staged write's temporary file
// after a failed transfer, which runs on a context that outlives the
// caller's (a cancelled call must not leave the file behind).
const discardTimeout = 30 * time.Second

// readArchived is ReadFileStream with the bytes of a file above
// Rule.ReadAbove through the archive: the agent answers the checks and the
// size without the bytes (HEAD), and a file at most that size comes
// through the agent after all. A refused HEAD is asked again as a GET,
// whose answer carries the classified error (a HEAD's has no body).
func (p Plane) readArchived(ctx context.Context, c *Conn, path string, maxBytes int64) (io.ReadCloser, int64, error) {
	if maxBytes <= p.Rule.ReadAbove {
		return c.ReadFileStream(ctx, path, maxBytes)
	}
	if err := sandbox.CheckFilePath(path); err != nil {
		return nil, 0, err
	}
	resp, err := c.send(ctx, http.MethodHead, agentwire.PathFile, readQuery(path, maxBytes), nil, 0)
	if err != nil || resp.ContentLength <= p.Rule.ReadAbove {
		if err == nil {
			_ = resp.Body.Close()
		}
		if err != nil && (errors.Is(err, ErrLost) || ctx.Err() != nil) {
			return nil, 0, fmt.Errorf("read %q: %w", path, err)
		}
		return c.ReadFileStream(ctx, path, maxBytes)
	}
	_ = resp.Body.Close()
	rc, err := p.Archive.Get(ctx, path)
	if err != nil {
		return nil, 0, err
	}
	return sandbox.OpenArchived(rc, path, maxBytes)
}

// writeArchived is WriteFileStream with the body through the archive: the
// agent answers every path fault and creates the temporary file beside the
// target as the sandbox's user (PathStage), the archive PUT fills it, and
// the agent checks its length and lands it (PathLand). A failed PUT — a
// short or long source, or ctx's end, ends the archive (PutStaged) —
// discards the temporary file, the target keeping its content.
func (p Plane) writeArchived(ctx context.Context, c *Conn, target string, src io.Reader, size int64) error {
	if err := sandbox.CheckFilePath(target); err != nil {
		return err
	}
	tmp, err := c.stage(ctx, target)
	if err != nil {
		return err
	}
	if err := PutStaged(ctx, p.Archive, tmp, src, size); err != nil {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), discardTimeout)
		defer cancel()
		_ = c.land(dctx, target, tmp, -1)
		return fmt.Errorf("write %q: %w", target, err)
	}
	return c.land(ctx, target, tmp, size)
}

// PutStaged fills a staged write's temporary file tmp with exactly size
// bytes of src through a.Put, and returns once the engine has answered: a
// source that proves short, long or failing, or ctx's end, ends the archive
// cleanly (EOF, not a broken request) instead of abandoning the call, so the
// engine has stopped writing tmp before the caller discards it — else its
// extraction could recreate tmp after the discard. The error is the
// source's (sandbox.ErrSizeMismatch for a wrong length), else ctx's, else
// the transfer's. The engine gets discardTimeout to answer after ctx's end.
func PutStaged(ctx context.Context, a Archive, tmp string, src io.Reader, size int64) error {
	return putEnded(ctx, a, pathpkg.Dir(tmp), func(w io.Writer) error {
		return sandbox.WriteOneArchive(w, pathpkg.Base(tmp), src, size)
	})
}

// putEnded PUTs the archive write produces into dir, ending it cleanly (see
// PutStaged) when write fails or ctx ends, and answers write's error, else
// ctx's, else the transfer's.
func putEnded(ctx context.Context, a Archive, dir string, write func(io.Writer) error) error {
	pr, pw := io.Pipe()
	srcErr := make(chan error, 1)
	go func() {
		err := write(pw)
		srcErr <- err
		_ = pw.Close()
	}()
	body := &endable{r: pr}
	putCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	stop := context.AfterFunc(ctx, func() {
		body.end()
		select {
		case <-time.After(discardTimeout):
			cancel()
		case <-putCtx.Done():
		}
	})
	err := a.Put(putCtx, dir, body)
	stop()
	_ = pr.Close() // a producer still writing stops (one still reading src stops at its next return)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	select {
	case serr := <-srcErr:
		if serr != nil {
			return serr
		}
	default: // the engine answered before the archive's end: its own failure
	}
	return err
}

// endable is an archive body that ends (EOF) on end(), even while a Read
// waits for the producer.
type endable struct {
	r     *io.PipeReader
	ended atomic.Bool
}

func (e *endable) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if e.ended.Load() {
		return n, io.EOF
	}
	return n, err
}

func (e *endable) end() {
	e.ended.Store(true)
	_ = e.r.Close()
}

// stage asks the agent for a staged write's temporary file (PathStage).
func (c *Conn) stage(ctx context.Context, target string) (string, error) {
	resp, err := c.send(ctx, http.MethodPost, agentwire.PathStage, neturl.Values{agentwire.QueryPath: {target}}, nil, 0)
	if err != nil {
		return "", fmt.Errorf("write %q: %w", target, err)
	}
	defer func() { _ = resp.Body.Close() }()
	tmp, err := io.ReadAll(io.LimitReader(resp.Body, 2*4096))
	if err != nil || pathpkg.Dir(string(tmp)) != pathpkg.Dir(target) {
		return "", fmt.Errorf("write %q: agent staged %q: %w", target, domain.Clip(string(tmp)), ErrLost)
	}
	return string(tmp), nil
}

// land lands a staged write of size bytes, or discards it (size < 0).
func (c *Conn) land(ctx context.Context, target, tmp string, size int64) error {
	q := neturl.Values{agentwire.QueryPath: {target}, agentwire.QueryTmp: {tmp}}
	if size < 0 {
		q.Set(agentwire.QueryDiscard, "1")
	} else {
		q.Set(agentwire.QuerySize, strconv.FormatInt(size, 10))
	}
	resp, err := c.send(ctx, http.MethodPost, agentwire.PathLand, q, nil, 0)
	if err != nil {
		return fmt.Errorf("write %q: %w", target, err)
	}
	return resp.Body.Close()
}

// Producer turns a function that writes a stream into a reader of it,
// through a pipe, so an archive is never held whole in memory. Closing the
// reader stops the writer, whoever stopped reading first.
func Producer(write func(io.Writer) error) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() { _ = pw.CloseWithError(write(pw)) }()
	return pr
}
