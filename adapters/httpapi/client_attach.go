package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/coder/websocket"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
)

// Attachment is a live attach to a proc (AttachProc): its output comes
// through Output, its stdin goes through Write, and Resize, Signal and
// CloseStdin control it. It is safe to write and control from another
// goroutine than the one reading Output.
type Attachment struct {
	conn *websocket.Conn
	ctx  context.Context
}

// AttachProc attaches to a proc of the session (GET …/procs/{pid}/attach,
// a WebSocket), its output from offset from of each stream. ctx bounds the
// whole attach: cancelling it detaches.
func (c *Client) AttachProc(ctx context.Context, sid domain.ID, pid string, from int64) (*Attachment, error) {
	u := *c.base
	u.Scheme = map[string]string{"http": "ws", "https": "wss"}[u.Scheme]
	u.Path += sessionPath(sid, "/procs/"+url.PathEscape(pid)+"/attach")
	if from > 0 {
		u.RawQuery = url.Values{"from": {strconv.FormatInt(from, 10)}}.Encode()
	}
	hdr := http.Header{}
	if c.token != "" {
		hdr.Set("Authorization", bearerScheme+" "+c.token)
	}
	conn, resp, err := websocket.Dial(ctx, u.String(), &websocket.DialOptions{HTTPClient: c.hc, HTTPHeader: hdr})
	if err != nil {
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
			defer func() { _ = resp.Body.Close() }()
			return nil, decodeError(resp)
		}
		return nil, fmt.Errorf("attach to proc %s: %w", pid, err)
	}
	conn.SetReadLimit(8 << 20)
	return &Attachment{conn: conn, ctx: ctx}, nil
}

// Output hands each piece of output to fn (stream "stdout" or "stderr")
// until the proc has exited and its output is drained, and returns the
// proc as it ended. fn's error detaches and is returned.
func (a *Attachment) Output(fn func(stream string, data []byte) error) (sandbox.ProcInfo, error) {
	for {
		typ, msg, err := a.conn.Read(a.ctx)
		if err != nil {
			return sandbox.ProcInfo{}, fmt.Errorf("attach: %w", err)
		}
		if typ == websocket.MessageText {
			return attachEnd(msg)
		}
		if len(msg) == 0 {
			continue
		}
		stream := sandbox.StreamStdout
		if msg[0] == AttachStderr {
			stream = sandbox.StreamStderr
		}
		if err := fn(stream, msg[1:]); err != nil {
			_ = a.Close()
			return sandbox.ProcInfo{}, err
		}
	}
}

func attachEnd(msg []byte) (sandbox.ProcInfo, error) {
	var end AttachEnd
	switch {
	case json.Unmarshal(msg, &end) != nil:
		return sandbox.ProcInfo{}, errors.New("attach: a malformed end message")
	case end.Error != nil:
		return sandbox.ProcInfo{}, &APIError{Status: codeStatus(end.Error.Code), Code: end.Error.Code, Message: end.Error.Message}
	case end.End == nil:
		return sandbox.ProcInfo{}, errors.New("attach: an end message without the proc")
	}
	return end.End.Proc(), nil
}

// Write sends p to the proc's stdin.
func (a *Attachment) Write(p []byte) (int, error) {
	if err := a.conn.Write(a.ctx, websocket.MessageBinary, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Resize resizes the proc's terminal.
func (a *Attachment) Resize(cols, rows int) error {
	c := AttachControl{Resize: &struct {
		Cols int `json:"cols"`
		Rows int `json:"rows"`
	}{cols, rows}}
	return a.control(c)
}

// Signal sends sig (one of sandbox.ProcSignals) to the proc's group.
func (a *Attachment) Signal(sig string) error { return a.control(AttachControl{Signal: sig}) }

// CloseStdin closes the proc's stdin (a PTY's gets its EOF character).
func (a *Attachment) CloseStdin() error { return a.control(AttachControl{CloseStdin: true}) }

func (a *Attachment) control(c AttachControl) error {
	msg, err := json.Marshal(c)
	if err != nil {
		return err
	}
	return a.conn.Write(a.ctx, websocket.MessageText, msg)
}

// Close detaches; the proc runs on.
func (a *Attachment) Close() error { return a.conn.CloseNow() }
