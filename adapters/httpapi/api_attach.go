package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"

	"github.com/coder/websocket"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/ports"
)

// The attach protocol (GET /v1/sessions/{id}/procs/{pid}/attach, a
// WebSocket): the server sends each piece of the proc's output as a binary
// message whose first byte is the stream (AttachStdout, AttachStderr) and
// the rest its bytes, from ?from= (0: the oldest the ring holds); when the
// proc has exited and its output is drained it sends one text message, an
// AttachEnd, and closes normally. The client sends stdin as binary
// messages, and controls as text messages (an AttachControl). Closing the
// socket detaches: the proc runs on (a PTY shell keeps its session for the
// next attach), so a client that wants it gone removes it.
const (
	AttachStdout byte = 1
	AttachStderr byte = 2
)

// AttachControl is a client's text message: exactly one field set.
type AttachControl struct {
	Resize *struct {
		Cols int `json:"cols"`
		Rows int `json:"rows"`
	} `json:"resize,omitempty"`
	Signal     string `json:"signal,omitempty"`
	CloseStdin bool   `json:"close_stdin,omitempty"`
}

// AttachEnd is the server's last message: the proc as it ended, or the
// error that ended the attach.
type AttachEnd struct {
	End   *ProcInfo    `json:"end,omitempty"`
	Error *ErrorDetail `json:"error,omitempty"`
}

// maxAttachMessage bounds a client's message (stdin pieces, controls).
const maxAttachMessage = 1 << 20

func (a *api) attachProc(w http.ResponseWriter, r *http.Request, sid domain.ID, procs ports.ProcHost, pid string) {
	q, err := outputQuery(r)
	if err == nil {
		// Before the upgrade, so an unknown proc is a plain 404.
		_, err = procs.Proc(r.Context(), pid)
	}
	release := func() {}
	if err == nil {
		release, err = a.stream(sid)
	}
	if err != nil {
		a.fail(w, r, err)
		return
	}
	defer release()
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		return // Accept answered
	}
	conn.SetReadLimit(maxAttachMessage)
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	in := newAttachInput(ctx, procs, pid)
	reading := make(chan struct{})
	go func() {
		defer close(reading)
		defer cancel() // the client is gone: the output read ends too
		in.serve(ctx, conn, a.log.Warn)
	}()
	// Whichever way the attach ends, nothing it started outlives it.
	defer func() {
		cancel()
		in.stop()
		_ = conn.CloseNow()
		<-reading
	}()
	q.Stream, q.Follow = "", true
	info, err := procs.ProcOutput(ctx, pid, q, func(c sandbox.ProcChunk) error {
		tag := AttachStdout
		if c.Stream == sandbox.StreamStderr {
			tag = AttachStderr
		}
		return conn.Write(ctx, websocket.MessageBinary, append([]byte{tag}, c.Data...))
	})
	if ctx.Err() != nil {
		return // detached
	}
	var end AttachEnd
	if err != nil {
		_, code, msg := a.classifyLogged(r, err, err)
		end.Error = &ErrorDetail{Code: code, Message: msg}
	} else {
		wire := NewProcInfo(info)
		end.End = &wire
	}
	if msg, err := json.Marshal(end); err == nil && conn.Write(ctx, websocket.MessageText, msg) == nil {
		_ = conn.Close(websocket.StatusNormalClosure, "")
	}
}

// attachInput feeds an attach's stdin messages to the proc through one
// long ProcStdin call (a pipe), in order, and runs its controls.
type attachInput struct {
	procs ports.ProcHost
	pid   string
	pw    *io.PipeWriter
	done  chan struct{}
	once  sync.Once
}

func newAttachInput(ctx context.Context, procs ports.ProcHost, pid string) *attachInput {
	pr, pw := io.Pipe()
	in := &attachInput{procs: procs, pid: pid, pw: pw, done: make(chan struct{})}
	go func() {
		defer close(in.done)
		err := procs.ProcStdin(ctx, pid, pr, false)
		_ = pr.CloseWithError(err) // a writer blocked on a dead stdin gets its error
	}()
	return in
}

// stop ends the stdin call and waits for it.
func (in *attachInput) stop() {
	in.once.Do(func() { _ = in.pw.Close() })
	<-in.done
}

// serve reads the client's messages until the socket ends.
func (in *attachInput) serve(ctx context.Context, conn *websocket.Conn, warn func(string, ...any)) {
	for {
		typ, data, err := conn.Read(ctx)
		if err != nil {
			return
		}
		if typ == websocket.MessageBinary {
			_, _ = in.pw.Write(data) // a closed stdin drops it, as a terminal would
			continue
		}
		var c AttachControl
		if err := json.Unmarshal(data, &c); err != nil {
			warn("attach: a control message that is not JSON", "proc", in.pid)
			continue
		}
		switch {
		case c.Resize != nil:
			_ = in.procs.ResizeProc(ctx, in.pid, c.Resize.Cols, c.Resize.Rows)
		case c.Signal != "":
			_ = in.procs.SignalProc(ctx, in.pid, c.Signal)
		case c.CloseStdin:
			in.stop()
			_ = in.procs.ProcStdin(ctx, in.pid, http.NoBody, true)
		}
	}
}
