package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/ports"
)

// Procs is the session's procs over the API (ports.ProcHost): the same
// interface the executor drives the agent's through, so a caller's code
// does not change with the distance.
func (c *Client) Procs(sid domain.ID) ports.ProcHost { return clientProcs{c: c, sid: sid} }

type clientProcs struct {
	c   *Client
	sid domain.ID
}

func (p clientProcs) path(pid, suffix string) string {
	return sessionPath(p.sid, "/procs/"+url.PathEscape(pid)+suffix)
}

func (p clientProcs) StartProc(ctx context.Context, req sandbox.ProcStart) (sandbox.ProcInfo, error) {
	var out ProcInfo
	err := p.c.callJSON(ctx, http.MethodPost, sessionPath(p.sid, "/procs"), nil, newProcRequest(req), &out)
	return out.Proc(), err
}

func (p clientProcs) Procs(ctx context.Context) ([]sandbox.ProcInfo, error) {
	var out ProcList
	if err := p.c.callJSON(ctx, http.MethodGet, sessionPath(p.sid, "/procs"), nil, nil, &out); err != nil {
		return nil, err
	}
	list := make([]sandbox.ProcInfo, len(out.Procs))
	for i, w := range out.Procs {
		list[i] = w.Proc()
	}
	return list, nil
}

func (p clientProcs) Proc(ctx context.Context, id string) (sandbox.ProcInfo, error) {
	var out ProcInfo
	err := p.c.callJSON(ctx, http.MethodGet, p.path(id, ""), nil, nil, &out)
	return out.Proc(), err
}

func (p clientProcs) WaitProc(ctx context.Context, id string) (sandbox.ProcInfo, error) {
	var out ProcInfo
	err := p.c.callJSON(ctx, http.MethodGet, p.path(id, "/wait"), nil, nil, &out)
	return out.Proc(), err
}

func (p clientProcs) RemoveProc(ctx context.Context, id string) error {
	return p.c.callJSON(ctx, http.MethodDelete, p.path(id, ""), nil, nil, nil)
}

func (p clientProcs) SignalProc(ctx context.Context, id, sig string) error {
	return p.c.callJSON(ctx, http.MethodPost, p.path(id, "/signal"), url.Values{"signal": {sig}}, nil, nil)
}

func (p clientProcs) ResizeProc(ctx context.Context, id string, cols, rows int) error {
	q := url.Values{"cols": {strconv.Itoa(cols)}, "rows": {strconv.Itoa(rows)}}
	return p.c.callJSON(ctx, http.MethodPost, p.path(id, "/resize"), q, nil, nil)
}

// ProcStdin streams src as the request's chunked body: each piece src
// yields is sent as it comes.
func (p clientProcs) ProcStdin(ctx context.Context, id string, src io.Reader, closeAfter bool) error {
	q := url.Values{}
	if closeAfter {
		q.Set("close", "true")
	}
	resp, err := p.c.call(ctx, http.MethodPost, p.path(id, "/stdin"), q, io.NopCloser(src), -1, "application/octet-stream")
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

// ProcOutput reads the NDJSON answer line by line, handing each piece to
// fn as it arrives.
func (p clientProcs) ProcOutput(ctx context.Context, id string, q sandbox.ProcOutputQuery, fn func(sandbox.ProcChunk) error) (sandbox.ProcInfo, error) {
	vals := url.Values{}
	if q.Stream != "" {
		vals.Set("stream", q.Stream)
	}
	if q.From != 0 {
		vals.Set("from", strconv.FormatInt(q.From, 10))
	}
	if q.Follow {
		vals.Set("follow", "true")
	}
	resp, err := p.c.call(ctx, http.MethodGet, p.path(id, "/output"), vals, nil, 0, "")
	if err != nil {
		return sandbox.ProcInfo{}, err
	}
	defer func() { _ = resp.Body.Close() }()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 8<<20)
	for sc.Scan() {
		var ev ProcOutputEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return sandbox.ProcInfo{}, fmt.Errorf("GET proc output: malformed answer: %w", err)
		}
		switch {
		case ev.Output != nil:
			chunk, err := ev.Output.Chunk()
			if err == nil {
				err = fn(chunk)
			}
			if err != nil {
				return sandbox.ProcInfo{}, err
			}
		case ev.Error != nil:
			return sandbox.ProcInfo{}, &APIError{Status: codeStatus(ev.Error.Code), Code: ev.Error.Code, Message: ev.Error.Message}
		case ev.End != nil:
			return ev.End.Proc(), nil
		}
	}
	if err := sc.Err(); err != nil {
		return sandbox.ProcInfo{}, fmt.Errorf("GET proc output: %w", err)
	}
	return sandbox.ProcInfo{}, fmt.Errorf("GET proc output: the answer ended without its end: %w", io.ErrUnexpectedEOF)
}
