package agent

import (
	"encoding/json"
	"net/http"

	"github.com/sandgate/sandgate/core/agentwire"
)

// eventWriter writes PathExec's answer: one JSON ExecEvent per line, each
// flushed as it is written so output reaches the caller as it arrives. It
// caps what it sends of each stream at max bytes (0: no cap) and drops the
// rest, remembering that it did. Write errors are ignored: a caller gone
// away ends the request's context, which is what stops the command.
type eventWriter struct {
	w         http.ResponseWriter
	flush     http.Flusher
	enc       *json.Encoder
	max       int64
	sent      [2]int64
	truncated bool
}

// newEventWriter returns nil when w cannot stream.
func newEventWriter(w http.ResponseWriter, maxBytes int64) *eventWriter {
	fl, ok := w.(http.Flusher)
	if !ok {
		return nil
	}
	return &eventWriter{w: w, flush: fl, enc: json.NewEncoder(w), max: maxBytes}
}

// begin sends the status line and headers.
func (e *eventWriter) begin() {
	e.w.Header().Set("Content-Type", "application/x-ndjson")
	e.w.WriteHeader(http.StatusOK)
}

func (e *eventWriter) event(ev agentwire.ExecEvent) {
	_ = e.enc.Encode(ev)
	e.flush.Flush()
}

// output sends a chunk of stdout or stderr within the stream's cap.
func (e *eventWriter) output(stderr bool, data []byte) {
	i := 0
	if stderr {
		i = 1
	}
	if e.max > 0 {
		room := e.max - e.sent[i]
		if int64(len(data)) > room {
			data = data[:max(room, 0)]
			e.truncated = true
		}
	}
	if len(data) == 0 {
		return
	}
	e.sent[i] += int64(len(data))
	if stderr {
		e.event(agentwire.ExecEvent{Stderr: data})
	} else {
		e.event(agentwire.ExecEvent{Stdout: data})
	}
}

func (e *eventWriter) exit(x agentwire.ExecExit) {
	x.Truncated = x.Truncated || e.truncated
	e.event(agentwire.ExecEvent{Exit: &x})
}
