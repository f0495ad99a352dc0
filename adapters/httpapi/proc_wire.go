package httpapi

import (
	"time"

	"github.com/sandgate/sandgate/core/sandbox"
)

// procRequest is the body of POST /v1/sessions/{id}/procs: a
// sandbox.ProcStart.
type procRequest struct {
	Command   string `json:"command"`
	TTY       bool   `json:"tty,omitempty"`
	Cols      int    `json:"cols,omitempty"`
	Rows      int    `json:"rows,omitempty"`
	RingBytes int64  `json:"ring_bytes,omitempty"`
	Tag       string `json:"tag,omitempty"`
}

func (r procRequest) start() sandbox.ProcStart {
	return sandbox.ProcStart{Command: r.Command, TTY: r.TTY, Cols: r.Cols, Rows: r.Rows, RingBytes: r.RingBytes, Tag: r.Tag}
}

func newProcRequest(s sandbox.ProcStart) procRequest {
	return procRequest{Command: s.Command, TTY: s.TTY, Cols: s.Cols, Rows: s.Rows, RingBytes: s.RingBytes, Tag: s.Tag}
}

// ProcInfo is the wire form of sandbox.ProcInfo.
type ProcInfo struct {
	ID          string     `json:"id"`
	Pid         int        `json:"pid"`
	TTY         bool       `json:"tty"`
	Tag         string     `json:"tag,omitempty"`
	Command     string     `json:"command"`
	State       string     `json:"state"`
	ExitCode    int        `json:"exit_code"`
	Signaled    bool       `json:"signaled"`
	StartedAt   time.Time  `json:"started_at"`
	EndedAt     *time.Time `json:"ended_at,omitempty"`
	StdoutBytes int64      `json:"stdout_bytes"`
	StderrBytes int64      `json:"stderr_bytes"`
}

// NewProcInfo is the wire form of p.
func NewProcInfo(p sandbox.ProcInfo) ProcInfo {
	w := ProcInfo{ID: p.ID, Pid: p.Pid, TTY: p.TTY, Tag: p.Tag, Command: p.Command, State: string(p.State),
		ExitCode: p.ExitCode, Signaled: p.Signaled, StartedAt: p.StartedAt, StdoutBytes: p.StdoutBytes, StderrBytes: p.StderrBytes}
	if !p.EndedAt.IsZero() {
		end := p.EndedAt
		w.EndedAt = &end
	}
	return w
}

// Proc is the sandbox.ProcInfo w carries.
func (w ProcInfo) Proc() sandbox.ProcInfo {
	p := sandbox.ProcInfo{ID: w.ID, Pid: w.Pid, TTY: w.TTY, Tag: w.Tag, Command: w.Command, State: sandbox.ProcState(w.State),
		ExitCode: w.ExitCode, Signaled: w.Signaled, StartedAt: w.StartedAt, StdoutBytes: w.StdoutBytes, StderrBytes: w.StderrBytes}
	if w.EndedAt != nil {
		p.EndedAt = *w.EndedAt
	}
	return p
}

// ProcList is the body of GET /v1/sessions/{id}/procs.
type ProcList struct {
	Procs []ProcInfo `json:"procs"`
}

// ProcOutputEvent is one line of GET …/procs/{pid}/output's NDJSON answer:
// exactly one field is set. Output pieces come in order (each stream's at
// its offset; Dropped counts the bytes before it the ring no longer held);
// the last line is End (the proc as the read ended: still "running" when
// a read without follow ended first) or Error; KeepAlive lines come while
// a followed proc is silent.
type ProcOutputEvent struct {
	Output    *ProcChunk   `json:"output,omitempty"`
	End       *ProcInfo    `json:"end,omitempty"`
	Error     *ErrorDetail `json:"error,omitempty"`
	KeepAlive bool         `json:"keepalive,omitempty"`
}

// ProcChunk is a piece of a proc's output: an ExecChunk with the bytes the
// ring dropped before it.
type ProcChunk struct {
	ExecChunk
	Dropped int64 `json:"dropped,omitempty"`
}

func newProcChunk(c sandbox.ProcChunk) *ProcChunk {
	pc := &ProcChunk{ExecChunk: ExecChunk{Stream: c.Stream, Offset: c.Offset}, Dropped: c.Dropped}
	pc.Text, pc.DataBase64 = encodeOutput(string(c.Data))
	return pc
}

// Chunk is the sandbox.ProcChunk c carries.
func (c ProcChunk) Chunk() (sandbox.ProcChunk, error) {
	data, err := c.Bytes()
	return sandbox.ProcChunk{Stream: c.Stream, Offset: c.Offset, Data: data, Dropped: c.Dropped}, err
}
