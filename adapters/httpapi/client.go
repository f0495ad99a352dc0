package httpapi

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/core/session"
	"github.com/sandgate/sandgate/ports"
)

// maxErrorBody bounds the error body the client reads.
const maxErrorBody = 64 << 10

// Client is the Go client of the executor API. It implements ports.Service
// across the wire: every error answer comes back as an *APIError that
// errors.Is matches against the sentinel of its code, and file bodies stream
// in both directions without being buffered.
type Client struct {
	base  *url.URL
	token string
	hc    *http.Client
}

var _ ports.Service = (*Client)(nil)

// NewClient returns a client of the API at baseURL (e.g.
// "http://127.0.0.1:7070") that sends token as its bearer token (none when
// empty). A nil hc is http.DefaultClient; give one with a Timeout only if no
// transfer may take longer.
func NewClient(baseURL, token string, hc *http.Client) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("api url %q: must be an absolute http or https URL", domain.Clip(baseURL))
	}
	if hc == nil {
		hc = http.DefaultClient
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	return &Client{base: u, token: token, hc: hc}, nil
}

// call sends one request and returns the response of a 2xx answer; any
// other answer is decoded into an *APIError and the body closed.
func (c *Client) call(ctx context.Context, method, p string, q url.Values, body io.Reader, size int64, ctype string) (*http.Response, error) {
	u := *c.base
	u.Path += p
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, p, err)
	}
	if body != nil {
		// An explicit length streams the body with a Content-Length; -1 sends
		// it chunked. A zero length needs NoBody, or the transport would
		// read it as unknown.
		req.ContentLength = size
		if size == 0 {
			req.Body = http.NoBody
		}
		req.Header.Set("Content-Type", ctype)
	}
	if c.token != "" {
		req.Header.Set("Authorization", bearerScheme+" "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, p, err)
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer func() { _ = resp.Body.Close() }()
	return nil, decodeError(resp)
}

// decodeError reads an error answer. A body that is not the API's error
// shape (a proxy's page) still yields an APIError with the status.
func decodeError(resp *http.Response) error {
	var e errorBody
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	if json.Unmarshal(raw, &e) != nil || e.Error.Code == "" {
		e.Error.Code = CodeInternal
		e.Error.Message = "unexpected answer: " + resp.Status
	}
	return &APIError{Status: resp.StatusCode, Code: e.Error.Code, Message: e.Error.Message}
}

// callJSON sends in (nil for no body) as JSON and decodes a 2xx answer into
// out (nil to discard it).
func (c *Client) callJSON(ctx context.Context, method, p string, q url.Values, in, out any) error {
	var body io.Reader
	size := int64(0)
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("%s %s: %w", method, p, err)
		}
		body, size = bytes.NewReader(b), int64(len(b))
	}
	resp, err := c.call(ctx, method, p, q, body, size, "application/json")
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if out == nil {
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("%s %s: decode the answer: %w", method, p, err)
	}
	return nil
}

func sessionPath(sid domain.ID, suffix string) string {
	return "/v1/sessions/" + url.PathEscape(sid.String()) + suffix
}

// Provision is PUT /v1/sessions/{id}.
func (c *Client) Provision(ctx context.Context, sid domain.ID, req session.Request) (ports.SessionInfo, error) {
	var out SessionResponse
	err := c.callJSON(ctx, http.MethodPut, sessionPath(sid, ""), nil, NewSessionRequest(req), &out)
	return out.Info(), err
}

// Get is GET /v1/sessions/{id}.
func (c *Client) Get(ctx context.Context, sid domain.ID) (ports.SessionInfo, error) {
	var out SessionResponse
	err := c.callJSON(ctx, http.MethodGet, sessionPath(sid, ""), nil, nil, &out)
	return out.Info(), err
}

// Delete is DELETE /v1/sessions/{id}[?checkpoint=true].
func (c *Client) Delete(ctx context.Context, sid domain.ID, checkpoint bool) error {
	q := url.Values{}
	if checkpoint {
		q.Set("checkpoint", "true")
	}
	return c.callJSON(ctx, http.MethodDelete, sessionPath(sid, ""), q, nil, nil)
}

// List is GET /v1/sessions.
func (c *Client) List(ctx context.Context) ([]ports.SessionInfo, error) {
	var l SessionList
	err := c.callJSON(ctx, http.MethodGet, "/v1/sessions", nil, nil, &l)
	return l.Infos(), err
}

// Exec is POST /v1/sessions/{id}/exec, or POST …/exec:stream when
// req.Output is set (its pieces handed to the sink as they arrive). The
// timeout travels in whole milliseconds, rounded up; the output comes back
// byte for byte (from the base64 fields when it is not UTF-8).
func (c *Client) Exec(ctx context.Context, sid domain.ID, req sandbox.ExecRequest) (sandbox.ExecResult, error) {
	in := execRequest{Command: req.Command, TimeoutMS: int64((req.Timeout + time.Millisecond - 1) / time.Millisecond)}
	if req.Timeout < 0 {
		in.TimeoutMS = -1
	}
	if req.Output != nil {
		res, err := c.execStream(ctx, sid, in, req.Output)
		if !isNoSuchEndpoint(err) {
			return res, err
		}
		// An executor older than exec:stream: the plain exec, its output
		// handed on at the end.
		res, err = c.Exec(ctx, sid, sandbox.ExecRequest{Command: req.Command, Timeout: req.Timeout})
		if err == nil {
			stdout, stderr := sandbox.NewExecCaptures(req)
			_, _ = stdout.Write([]byte(res.Stdout))
			_, _ = stderr.Write([]byte(res.Stderr))
		}
		return res, err
	}
	var out ExecResponse
	if err := c.callJSON(ctx, http.MethodPost, sessionPath(sid, "/exec"), nil, in, &out); err != nil {
		return sandbox.ExecResult{}, err
	}
	res, err := out.Result()
	if err != nil {
		return sandbox.ExecResult{}, fmt.Errorf("POST exec: decode the answer: %w", err)
	}
	return res, nil
}

// ReadFile is GET /v1/sessions/{id}/files?path=&max_bytes=: the body
// streams, with its size from Content-Length. maxBytes ≤ 0 leaves the cap to
// the server (its MaxStreamBytes). The caller closes it; a transfer that
// breaks surfaces on Read.
func (c *Client) ReadFile(ctx context.Context, sid domain.ID, p string, maxBytes int64) (io.ReadCloser, int64, error) {
	q := url.Values{"path": {p}}
	if maxBytes > 0 {
		q.Set("max_bytes", strconv.FormatInt(maxBytes, 10))
	}
	resp, err := c.call(ctx, http.MethodGet, sessionPath(sid, "/files"), q, nil, 0, "")
	if err != nil {
		return nil, 0, err
	}
	if resp.ContentLength < 0 {
		_ = resp.Body.Close()
		return nil, 0, fmt.Errorf("read %s: the answer has no Content-Length", p)
	}
	return resp.Body, resp.ContentLength, nil
}

// WriteFile is PUT /v1/sessions/{id}/files?path=, streaming exactly size
// bytes of src with that Content-Length.
func (c *Client) WriteFile(ctx context.Context, sid domain.ID, p string, src io.Reader, size int64) error {
	if err := sandbox.CheckWriteSize(size); err != nil {
		return fmt.Errorf("%w: size: %w", session.ErrInvalidRequest, err)
	}
	if src == nil {
		src = http.NoBody
	}
	resp, err := c.call(ctx, http.MethodPut, sessionPath(sid, "/files"), url.Values{"path": {p}}, src, size, "application/octet-stream")
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

// WriteFiles is POST /v1/sessions/{id}/files:batch with the batch as a tar
// of absolute names, produced while it is sent.
func (c *Client) WriteFiles(ctx context.Context, sid domain.ID, files []sandbox.FileWrite) error {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(writeTar(pw, files)) }()
	defer func() { _ = pr.Close() }()
	return c.WriteArchive(ctx, sid, "", pr)
}

// writeTar writes files as a tar of regular 0644 members.
func writeTar(w io.Writer, files []sandbox.FileWrite) error {
	tw := tar.NewWriter(w)
	for _, f := range files {
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: f.Path, Mode: 0o644, Size: int64(len(f.Data))}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if _, err := tw.Write(f.Data); err != nil {
			return err
		}
	}
	return tw.Close()
}

// WriteArchive is POST /v1/sessions/{id}/files:batch with a tar the caller
// streams: absolute names when root is empty, names relative to root
// otherwise (the shape of `tar -C dir -cf - .`).
func (c *Client) WriteArchive(ctx context.Context, sid domain.ID, root string, archive io.Reader) error {
	q := url.Values{}
	if root != "" {
		q.Set("root", root)
	}
	resp, err := c.call(ctx, http.MethodPost, sessionPath(sid, "/files:batch"), q, archive, -1, "application/x-tar")
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

// Export is GET /v1/sessions/{id}/export?root=: a tar stream the caller
// closes. A transfer the server aborts surfaces on Read.
func (c *Client) Export(ctx context.Context, sid domain.ID, root string) (io.ReadCloser, error) {
	resp, err := c.call(ctx, http.MethodGet, sessionPath(sid, "/export"), url.Values{"root": {root}}, nil, 0, "")
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// Stat is GET /v1/sessions/{id}/files:stat?path=.
func (c *Client) Stat(ctx context.Context, sid domain.ID, p string) (sandbox.FileInfo, error) {
	var out FileInfo
	if err := c.callJSON(ctx, http.MethodGet, sessionPath(sid, "/files:stat"), url.Values{"path": {p}}, nil, &out); err != nil {
		return sandbox.FileInfo{}, err
	}
	fi, err := out.Info()
	if err != nil {
		return sandbox.FileInfo{}, fmt.Errorf("GET files:stat: decode the answer: %w", err)
	}
	return fi, nil
}

// ListDir is GET /v1/sessions/{id}/files:list?path=.
func (c *Client) ListDir(ctx context.Context, sid domain.ID, p string) ([]sandbox.FileInfo, error) {
	var out FileList
	if err := c.callJSON(ctx, http.MethodGet, sessionPath(sid, "/files:list"), url.Values{"path": {p}}, nil, &out); err != nil {
		return nil, err
	}
	infos, err := out.Infos()
	if err != nil {
		return nil, fmt.Errorf("GET files:list: decode the answer: %w", err)
	}
	return infos, nil
}

// Remove is DELETE /v1/sessions/{id}/files?path=[&recursive=true].
func (c *Client) Remove(ctx context.Context, sid domain.ID, p string, recursive bool) error {
	return c.callJSON(ctx, http.MethodDelete, sessionPath(sid, "/files"), flagQuery(p, "recursive", recursive), nil, nil)
}

// Mkdir is POST /v1/sessions/{id}/files:mkdir?path=[&parents=true].
func (c *Client) Mkdir(ctx context.Context, sid domain.ID, p string, parents bool) error {
	return c.callJSON(ctx, http.MethodPost, sessionPath(sid, "/files:mkdir"), flagQuery(p, "parents", parents), nil, nil)
}

// flagQuery is ?path=p, with name=true when on.
func flagQuery(p, name string, on bool) url.Values {
	q := url.Values{"path": {p}}
	if on {
		q.Set(name, "true")
	}
	return q
}
