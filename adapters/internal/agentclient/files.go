package agentclient

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	neturl "net/url"
	"path"
	"strconv"

	"github.com/sandgate/sandgate/core/agentwire"
	"github.com/sandgate/sandgate/core/sandbox"
)

// The file operations validate their paths with core/sandbox before a byte
// travels (the agent validates again: it trusts no caller), and answer the
// sentinels the fallback path answers, wrapped with the operation and path.

// ReadFile implements ports.Sandbox.ReadFile over the agent.
func (c *Conn) ReadFile(ctx context.Context, p string) ([]byte, error) {
	rc, _, err := c.ReadFileStream(ctx, p, sandbox.MaxFileBytes)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rc.Close() }()
	data, err := io.ReadAll(rc)
	if err != nil {
		return nil, fmt.Errorf("read %q: %w", p, err)
	}
	return data, nil
}

// ReadFileStream implements ports.Sandbox.ReadFileStream: the agent refuses
// a file above maxBytes before any byte travels, and announces the exact
// size; a body that ends short is an error on Read.
func (c *Conn) ReadFileStream(ctx context.Context, p string, maxBytes int64) (io.ReadCloser, int64, error) {
	if err := sandbox.CheckFilePath(p); err != nil {
		return nil, 0, err
	}
	resp, err := c.send(ctx, http.MethodGet, agentwire.PathFile, readQuery(p, maxBytes), nil, 0)
	if err != nil {
		return nil, 0, fmt.Errorf("read %q: %w", p, err)
	}
	if resp.ContentLength < 0 || resp.ContentLength > maxBytes {
		_ = resp.Body.Close()
		return nil, 0, fmt.Errorf("read %q: agent announced %d bytes (cap %d): %w", p, resp.ContentLength, maxBytes, ErrLost)
	}
	return resp.Body, resp.ContentLength, nil
}

// readQuery is a read's query: the path and its cap.
func readQuery(p string, maxBytes int64) neturl.Values {
	return neturl.Values{agentwire.QueryPath: {p}, agentwire.QueryMax: {strconv.FormatInt(maxBytes, 10)}}
}

// WriteFileStream implements ports.Sandbox.WriteFileStream: the body is
// exactly size bytes or the agent never sees its end, so it lands nothing.
func (c *Conn) WriteFileStream(ctx context.Context, p string, src io.Reader, size int64) error {
	if err := sandbox.CheckFilePath(p); err != nil {
		return err
	}
	if err := sandbox.CheckWriteSize(size); err != nil {
		return err
	}
	var body io.Reader
	if size == 0 {
		// An empty body travels as none, so the source is checked here.
		if err := (&exactReader{src: src}).checkEnd(); !errors.Is(err, io.EOF) {
			return fmt.Errorf("write %q: %w", p, err)
		}
	} else {
		pr, done := pump(ctx, &exactReader{src: src, left: size})
		defer done()
		body = pr
	}
	q := neturl.Values{agentwire.QueryPath: {p}}
	resp, err := c.send(ctx, http.MethodPut, agentwire.PathFile, q, body, size)
	if err != nil {
		return fmt.Errorf("write %q: %w", p, err)
	}
	return resp.Body.Close()
}

// WriteFile implements ports.Sandbox.WriteFile.
func (c *Conn) WriteFile(ctx context.Context, p string, data []byte) error {
	return c.WriteFileStream(ctx, p, bytes.NewReader(data), int64(len(data)))
}

// WriteFiles implements ports.Sandbox.WriteFiles: one tar of the members,
// which the agent stages whole before it renames the first.
func (c *Conn) WriteFiles(ctx context.Context, workdir string, files []sandbox.FileWrite) error {
	if _, err := sandbox.PlanBulk(workdir, files); err != nil {
		return err
	}
	body, w := io.Pipe()
	go func() { _ = w.CloseWithError(writeTar(w, files)) }()
	defer func() { _ = body.Close() }()
	resp, err := c.send(ctx, http.MethodPut, agentwire.PathFiles, nil, body, -1)
	if err != nil {
		return fmt.Errorf("write files: %w", err)
	}
	return resp.Body.Close()
}

// pump hands src to the HTTP transport through a pipe that ctx's end
// breaks: the transport waits for its body reader before a cancelled call
// returns, and the caller's source may block. The copy itself ends at the
// source's next return. done releases the pipe once the call is over.
func pump(ctx context.Context, src io.Reader) (_ *io.PipeReader, done func()) {
	pr, pw := io.Pipe()
	go func() {
		_, err := io.Copy(pw, src)
		_ = pw.CloseWithError(err)
	}()
	stop := context.AfterFunc(ctx, func() { _ = pr.CloseWithError(ctx.Err()) })
	return pr, func() {
		stop()
		_ = pr.Close()
	}
}

func writeTar(w io.Writer, files []sandbox.FileWrite) error {
	tw := tar.NewWriter(w)
	for _, f := range files {
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: f.Path, Mode: 0o644, Size: int64(len(f.Data)), Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if _, err := tw.Write(f.Data); err != nil {
			return err
		}
	}
	return tw.Close()
}

// Stat implements ports.Sandbox.Stat over the agent.
func (c *Conn) Stat(ctx context.Context, p string) (sandbox.FileInfo, error) {
	if err := sandbox.CheckMetaPath(p); err != nil {
		return sandbox.FileInfo{}, err
	}
	var fi agentwire.FileInfo
	if err := c.getJSON(ctx, agentwire.PathStat, p, &fi); err != nil {
		return sandbox.FileInfo{}, fmt.Errorf("stat %q: %w", p, err)
	}
	return fileInfo(fi), nil
}

// List implements ports.Sandbox.List over the agent, which bounds the
// entries itself; the answer is bounded and sorted again here, since the
// agent is in the sandbox's reach.
func (c *Conn) List(ctx context.Context, p string) ([]sandbox.FileInfo, error) {
	if err := sandbox.CheckMetaPath(p); err != nil {
		return nil, err
	}
	var wire []agentwire.FileInfo
	err := c.getJSON(ctx, agentwire.PathList, p, &wire)
	if errors.Is(err, sandbox.ErrFileTooLarge) {
		err = sandbox.ErrTooManyEntries // the agent's bound, said as the fallback says it
	}
	if err != nil {
		return nil, fmt.Errorf("list %q: %w", p, err)
	}
	infos := make([]sandbox.FileInfo, len(wire))
	for i, fi := range wire {
		infos[i] = fileInfo(fi)
	}
	return sandbox.SortList(p, infos)
}

// Remove implements ports.Sandbox.Remove over the agent.
func (c *Conn) Remove(ctx context.Context, p string, recursive bool) error {
	if err := sandbox.CheckRemovePath(p); err != nil {
		return err
	}
	return c.post(ctx, agentwire.PathRemove, p, agentwire.QueryRecursive, recursive)
}

// Mkdir implements ports.Sandbox.Mkdir over the agent.
func (c *Conn) Mkdir(ctx context.Context, p string, parents bool) error {
	if err := sandbox.CheckMetaPath(p); err != nil {
		return err
	}
	return c.post(ctx, agentwire.PathMkdir, p, agentwire.QueryParents, parents)
}

// fileInfo converts the agent's document; the type strings are the same.
func fileInfo(fi agentwire.FileInfo) sandbox.FileInfo {
	return sandbox.FileInfo{Name: fi.Name, Type: sandbox.FileType(fi.Type), Size: fi.Size, Mode: fi.Mode & 0o7777,
		ModTime: fi.ModTime.UTC(), LinkTarget: fi.LinkTarget}
}

func (c *Conn) getJSON(ctx context.Context, route, p string, out any) error {
	resp, err := c.send(ctx, http.MethodGet, route, neturl.Values{agentwire.QueryPath: {p}}, nil, 0)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxListBody+1))
	switch {
	case err != nil:
		return fmt.Errorf("%w: %w", ErrLost, err)
	case len(body) > maxListBody:
		return sandbox.ErrTooManyEntries
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("%w: %w", ErrLost, err)
	}
	return nil
}

// maxListBody bounds a stat or list answer: the fallback's bound on a
// listing (sandbox.MaxListBytes), with room for JSON's keys and escapes.
const maxListBody = 2 * sandbox.MaxListBytes

func (c *Conn) post(ctx context.Context, route, p, flag string, on bool) error {
	q := neturl.Values{agentwire.QueryPath: {p}}
	if on {
		q.Set(flag, "1")
	}
	resp, err := c.send(ctx, http.MethodPost, route, q, nil, 0)
	if err != nil {
		return fmt.Errorf("%s %q: %w", path.Base(route), p, err)
	}
	return resp.Body.Close()
}

// send builds and sends one exchange; size is the body's length (-1:
// unknown, chunked).
func (c *Conn) send(ctx context.Context, method, route string, q neturl.Values, body io.Reader, size int64) (*http.Response, error) {
	u := url(route)
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.ContentLength = size
	}
	return c.do(ctx, req)
}
