package agentclient

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	neturl "net/url"
	"strconv"

	"github.com/sandgate/sandgate/core/agentwire"
	"github.com/sandgate/sandgate/core/sandbox"
)

// The proc operations: commands the agent owns past the call that started
// them (agentwire's PathProcs routes). Each checks its input with
// core/sandbox before a byte travels and answers core/sandbox's proc
// sentinels (ErrProcNotFound, ErrTooManyProcs, ErrProcExited,
// ErrStdinClosed, ErrInvalidProc), or ErrLost when the agent's stream
// dropped. Every call ends with its context, streams included.

// StartProc starts a proc and returns it, running.
func (c *Conn) StartProc(ctx context.Context, req sandbox.ProcStart) (sandbox.ProcInfo, error) {
	if err := sandbox.ValidateProcStart(req); err != nil {
		return sandbox.ProcInfo{}, err
	}
	body, err := json.Marshal(agentwire.ProcStart{Command: req.Command, Workdir: req.Workdir, TTY: req.TTY,
		Cols: req.Cols, Rows: req.Rows, RingBytes: req.RingBytes, Tag: req.Tag})
	if err != nil {
		return sandbox.ProcInfo{}, err
	}
	var info agentwire.ProcInfo
	err = c.procJSON(ctx, http.MethodPost, agentwire.PathProcs, nil, bytes.NewReader(body), int64(len(body)), &info)
	if err != nil {
		return sandbox.ProcInfo{}, fmt.Errorf("start proc: %w", err)
	}
	return procInfo(info), nil
}

// Procs lists the procs, running and exited not yet removed, oldest first.
func (c *Conn) Procs(ctx context.Context) ([]sandbox.ProcInfo, error) {
	var wire []agentwire.ProcInfo
	if err := c.procJSON(ctx, http.MethodGet, agentwire.PathProcs, nil, nil, 0, &wire); err != nil {
		return nil, fmt.Errorf("list procs: %w", err)
	}
	infos := make([]sandbox.ProcInfo, len(wire))
	for i, in := range wire {
		infos[i] = procInfo(in)
	}
	return infos, nil
}

// Proc returns the proc id.
func (c *Conn) Proc(ctx context.Context, id string) (sandbox.ProcInfo, error) {
	return c.procInfoAt(ctx, agentwire.PathProc, id)
}

// WaitProc blocks until the proc id has exited and its output is drained,
// and returns it.
func (c *Conn) WaitProc(ctx context.Context, id string) (sandbox.ProcInfo, error) {
	return c.procInfoAt(ctx, agentwire.PathProcWait, id)
}

func (c *Conn) procInfoAt(ctx context.Context, route, id string) (sandbox.ProcInfo, error) {
	if err := sandbox.ValidateProcID(id); err != nil {
		return sandbox.ProcInfo{}, err
	}
	var info agentwire.ProcInfo
	if err := c.procJSON(ctx, http.MethodGet, agentwire.ProcPath(route, id), nil, nil, 0, &info); err != nil {
		return sandbox.ProcInfo{}, fmt.Errorf("proc %s: %w", id, err)
	}
	return procInfo(info), nil
}

// SignalProc sends sig (one of sandbox.ProcSignals) to the proc's group.
func (c *Conn) SignalProc(ctx context.Context, id, sig string) error {
	if err := sandbox.ValidateProcSignal(sig); err != nil {
		return err
	}
	return c.procCall(ctx, http.MethodPost, agentwire.PathProcSignal, id, neturl.Values{agentwire.QuerySignal: {sig}}, nil)
}

// ResizeProc resizes the terminal of a PTY proc.
func (c *Conn) ResizeProc(ctx context.Context, id string, cols, rows int) error {
	if err := sandbox.ValidateTermSize(cols, rows); err != nil {
		return err
	}
	q := neturl.Values{agentwire.QueryCols: {strconv.Itoa(cols)}, agentwire.QueryRows: {strconv.Itoa(rows)}}
	return c.procCall(ctx, http.MethodPost, agentwire.PathProcResize, id, q, nil)
}

// RemoveProc kills the proc's group if it runs and forgets the proc.
func (c *Conn) RemoveProc(ctx context.Context, id string) error {
	return c.procCall(ctx, http.MethodDelete, agentwire.PathProc, id, nil, nil)
}

// ProcStdin streams src into the proc's stdin as src yields it, held back
// by the proc's pipe (so src may be endless: the call ends with ctx, or at
// src's EOF); closeAfter then closes stdin (a PTY gets ^D).
func (c *Conn) ProcStdin(ctx context.Context, id string, src io.Reader, closeAfter bool) error {
	var q neturl.Values
	if closeAfter {
		q = neturl.Values{agentwire.QueryClose: {"1"}}
	}
	body, done := pump(ctx, src)
	defer done()
	return c.procCall(ctx, http.MethodPost, agentwire.PathProcStdin, id, q, body)
}

// procCall sends one proc exchange whose answer has no body.
func (c *Conn) procCall(ctx context.Context, method, route, id string, q neturl.Values, body io.Reader) error {
	if err := sandbox.ValidateProcID(id); err != nil {
		return err
	}
	resp, err := c.send(ctx, method, agentwire.ProcPath(route, id), q, body, -1)
	if err != nil {
		return fmt.Errorf("proc %s: %w", id, procErr(err))
	}
	return resp.Body.Close()
}

// maxProcAnswer bounds a proc document or list, so an agent cannot grow
// the executor's memory with one: every proc's command at its longest,
// escaped.
const maxProcAnswer = (sandbox.MaxRunningProcs + sandbox.MaxExitedProcs) * (6*sandbox.MaxCommandBytes + 4<<10)

func (c *Conn) procJSON(ctx context.Context, method, route string, q neturl.Values, body io.Reader, size int64, out any) error {
	resp, err := c.send(ctx, method, route, q, body, size)
	if err != nil {
		return procErr(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxProcAnswer)).Decode(out); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%w: %w", ErrLost, err)
	}
	return nil
}

// procErr gives the agent's invalid_argument its sentinel: the checks here
// mirror the agent's, so it is rare (an agent of another version).
func procErr(err error) error {
	var e *agentwire.CodeError
	if errors.As(err, &e) && e.Code == agentwire.CodeInvalid {
		return fmt.Errorf("%w: %s", sandbox.ErrInvalidProc, e.Message)
	}
	return err
}

// ProcOutput hands the proc's output to fn chunk by chunk as it arrives,
// and returns the proc as the answer ended (still running when a read
// without Follow ended first). fn's error ends the call with it. Memory is
// one chunk: a slow fn holds the agent's answer back, never buffers it;
// the agent's ring moves on, and the next chunk says what was dropped.
func (c *Conn) ProcOutput(ctx context.Context, id string, q sandbox.ProcOutputQuery, fn func(sandbox.ProcChunk) error) (sandbox.ProcInfo, error) {
	if err := sandbox.ValidateProcID(id); err != nil {
		return sandbox.ProcInfo{}, err
	}
	vals, err := outputValues(q)
	if err != nil {
		return sandbox.ProcInfo{}, err
	}
	resp, err := c.send(ctx, http.MethodGet, agentwire.ProcPath(agentwire.PathProcOutput, id), vals, nil, 0)
	if err != nil {
		return sandbox.ProcInfo{}, fmt.Errorf("proc %s: output: %w", id, procErr(err))
	}
	defer func() { _ = resp.Body.Close() }()
	info, err := readChunks(resp.Body, fn)
	if err != nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	if err != nil {
		return sandbox.ProcInfo{}, fmt.Errorf("proc %s: output: %w", id, err)
	}
	return info, nil
}

func outputValues(q sandbox.ProcOutputQuery) (neturl.Values, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	vals := neturl.Values{}
	if q.Stream != "" {
		vals.Set(agentwire.QueryStream, q.Stream)
	}
	if q.From > 0 {
		vals.Set(agentwire.QueryFrom, strconv.FormatInt(q.From, 10))
	}
	if q.Follow {
		vals.Set(agentwire.QueryFollow, "1")
	}
	return vals, nil
}

// maxChunkLine bounds one line of the output answer: the last line's
// ProcInfo with the longest command, escaped, and room for the rest (a
// chunk's 32 KiB of data in base64 is far less).
const maxChunkLine = 6*sandbox.MaxCommandBytes + 64<<10

// readChunks decodes the output answer line by line, each bounded, until
// its last line; an answer that ends without one is ErrLost.
func readChunks(body io.Reader, fn func(sandbox.ProcChunk) error) (sandbox.ProcInfo, error) {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 0, 64<<10), maxChunkLine)
	for sc.Scan() {
		var c agentwire.ProcChunk
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			return sandbox.ProcInfo{}, fmt.Errorf("%w: %w", ErrLost, err)
		}
		if c.EOF && c.Exit != nil {
			return procInfo(*c.Exit), nil
		}
		if c.Stream != sandbox.StreamStdout && c.Stream != sandbox.StreamStderr {
			return sandbox.ProcInfo{}, fmt.Errorf("%w: a chunk of stream %q", ErrLost, c.Stream)
		}
		if err := fn(sandbox.ProcChunk{Stream: c.Stream, Offset: c.Offset, Data: c.Data, Dropped: c.Dropped}); err != nil {
			return sandbox.ProcInfo{}, err
		}
	}
	if err := sc.Err(); err != nil {
		return sandbox.ProcInfo{}, fmt.Errorf("%w: %w", ErrLost, err)
	}
	return sandbox.ProcInfo{}, fmt.Errorf("%w: the output ended without its last line", ErrLost)
}

// procInfo converts the agent's document.
func procInfo(in agentwire.ProcInfo) sandbox.ProcInfo {
	out := sandbox.ProcInfo{ID: in.ID, Pid: in.Pid, TTY: in.TTY, Tag: in.Tag, Command: in.Command,
		State: sandbox.ProcState(in.State), ExitCode: in.ExitCode, Signaled: in.Signaled,
		StartedAt: in.StartedAt.UTC(), StdoutBytes: in.StdoutBytes, StderrBytes: in.StderrBytes}
	if in.EndedAt != nil {
		out.EndedAt = in.EndedAt.UTC()
	}
	return out
}
