package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/sandgate/sandgate/core/sandbox"
)

const (
	// commitAfter: a command silent this long gets its 200 and headers
	// anyway, so a client waiting for them does not time out on `sleep`.
	// An error before then (an unknown session, a bad request, a busy
	// executor) is still a plain error answer with its status.
	commitAfter = 250 * time.Millisecond
	// KeepAliveInterval is how often a silent command's answer carries a
	// keepalive line, under the idle timeouts of common proxies.
	KeepAliveInterval = 15 * time.Second
)

// execStream answers POST /v1/sessions/{id}/exec:stream: the exec of POST
// …/exec, its output sent as it is produced (ExecStreamEvent lines). A
// client that stops reading holds the command's output back (nothing is
// buffered here beyond one line); one that has not taken a line for
// StreamStallTimeout, or is gone, cancels the exec, which kills the
// command as a cancelled POST …/exec does.
func (a *api) execStream(w http.ResponseWriter, r *http.Request) {
	sid, req, err := execInput(w, r)
	release := func() {}
	if err == nil {
		release, err = a.stream(sid)
	}
	if err != nil {
		a.fail(w, r, err)
		return
	}
	defer release()
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	out := a.ndjson(w, cancel)
	stop := out.keepAlive()
	req.Output = out
	res, err := a.svc.Exec(ctx, sid, req)
	stop()
	if !out.finish(func() any {
		if err != nil {
			_, code, msg := a.classifyLogged(r, err, err)
			return ExecStreamEvent{Error: &ErrorDetail{Code: code, Message: msg}}
		}
		return ExecStreamEvent{Result: newExecStreamResult(res)}
	}, err != nil) {
		a.fail(w, r, err)
	}
}

// ndjsonOut is a streamed exec's OutputSink writing NDJSON lines to the
// answer. Its lines are written one at a time (the two streams and the
// keepalive share it); a write that fails or stalls fails the stream: the
// exec is cancelled and later lines are dropped.
type ndjsonOut struct {
	w      http.ResponseWriter
	rc     *http.ResponseController
	stall  time.Duration
	cancel context.CancelFunc

	mu        sync.Mutex
	committed bool
	failed    bool
	last      time.Time
}

// ndjson starts an NDJSON answer on w; cancel is called when it fails.
func (a *api) ndjson(w http.ResponseWriter, cancel context.CancelFunc) *ndjsonOut {
	return &ndjsonOut{w: w, rc: http.NewResponseController(w), stall: a.opts.StreamStallTimeout, cancel: cancel}
}

// Output sends one piece of output.
func (o *ndjsonOut) Output(stream sandbox.Stream, offset int64, data []byte) {
	o.send(ExecStreamEvent{Output: newExecChunk(stream, offset, data)})
}

// send writes one line; it reports whether the stream still stands.
func (o *ndjsonOut) send(ev any) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.writeLocked(ev)
	return !o.failed
}

// keepAlive commits the answer once the command has been silent for
// commitAfter, then sends a keepalive line whenever it has been silent for
// KeepAliveInterval; stop ends it and returns once it has.
func (o *ndjsonOut) keepAlive() (stop func()) {
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTimer(commitAfter)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			o.mu.Lock()
			switch {
			case !o.committed:
				o.commitLocked()
			case time.Since(o.last) >= KeepAliveInterval:
				o.writeLocked(keepAliveLine{true})
			}
			wait := KeepAliveInterval - time.Since(o.last)
			o.mu.Unlock()
			t.Reset(max(wait, time.Second))
		}
	}()
	return func() { close(done); <-stopped }
}

// keepAliveLine is the keepalive line of every NDJSON answer.
type keepAliveLine struct {
	KeepAlive bool `json:"keepalive"`
}

// finish writes the last line, made by last. When nothing was committed
// and plain is set (the call failed before any output), it writes nothing
// and returns false: the caller answers a plain error instead.
func (o *ndjsonOut) finish(last func() any, plain bool) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.committed && plain {
		return false
	}
	o.writeLocked(last())
	// The deadline is the connection's: a kept-alive connection's next
	// request must not inherit it.
	_ = o.rc.SetWriteDeadline(time.Time{})
	return true
}

func (o *ndjsonOut) commitLocked() {
	if o.committed || o.failed {
		return
	}
	o.committed = true
	hd := o.w.Header()
	hd.Set("Content-Type", "application/x-ndjson")
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("X-Accel-Buffering", "no") // a buffering reverse proxy would hold the lines
	o.w.WriteHeader(http.StatusOK)
	o.flushLocked()
	o.last = time.Now()
}

func (o *ndjsonOut) writeLocked(ev any) {
	o.commitLocked()
	if o.failed {
		return
	}
	line, err := json.Marshal(ev)
	if err != nil { // plain structs of strings and numbers always marshal
		o.fail()
		return
	}
	_ = o.rc.SetWriteDeadline(time.Now().Add(o.stall))
	if _, err := o.w.Write(append(line, '\n')); err != nil {
		o.fail()
		return
	}
	o.flushLocked()
	o.last = time.Now()
}

func (o *ndjsonOut) flushLocked() {
	if err := o.rc.Flush(); err != nil {
		o.fail()
	}
}

func (o *ndjsonOut) fail() {
	o.failed = true
	o.cancel()
}
