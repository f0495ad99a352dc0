package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"strconv"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/core/session"
	"github.com/sandgate/sandgate/ports"
)

// procRoutes are the routes of a session's procs (ports.ProcHost); {pid}
// is the agent's proc id.
func (a *api) procRoutes() []route {
	return []route{
		{"POST /v1/sessions/{id}/procs", a.startProc},
		{"GET /v1/sessions/{id}/procs", a.listProcs},
		{"GET /v1/sessions/{id}/procs/{pid}", a.withProcs(a.getProc)},
		{"DELETE /v1/sessions/{id}/procs/{pid}", a.withProcs(a.removeProc)},
		{"GET /v1/sessions/{id}/procs/{pid}/output", a.withProcs(a.procOutput)},
		{"POST /v1/sessions/{id}/procs/{pid}/stdin", a.withProcs(a.procStdin)},
		{"POST /v1/sessions/{id}/procs/{pid}/signal", a.withProcs(a.signalProc)},
		{"POST /v1/sessions/{id}/procs/{pid}/resize", a.withProcs(a.resizeProc)},
		{"GET /v1/sessions/{id}/procs/{pid}/wait", a.withProcs(a.waitProc)},
		{"GET /v1/sessions/{id}/procs/{pid}/attach", a.withProcs(a.attachProc)},
	}
}

// procHandler serves one proc's route with the session's procs and the id.
type procHandler func(w http.ResponseWriter, r *http.Request, sid domain.ID, procs ports.ProcHost, pid string)

func (a *api) withProcs(h procHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sid, err := sessionID(r)
		if err != nil {
			a.fail(w, r, err)
			return
		}
		h(w, r, sid, a.svc.Procs(sid), r.PathValue("pid"))
	}
}

func (a *api) startProc(w http.ResponseWriter, r *http.Request) {
	sid, err := sessionID(r)
	var req procRequest
	if err == nil {
		err = decodeJSON(w, r, &req)
	}
	var info sandbox.ProcInfo
	if err == nil {
		info, err = a.svc.Procs(sid).StartProc(r.Context(), req.start())
	}
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.replyStatus(w, http.StatusCreated, NewProcInfo(info))
}

func (a *api) listProcs(w http.ResponseWriter, r *http.Request) {
	sid, err := sessionID(r)
	var list []sandbox.ProcInfo
	if err == nil {
		list, err = a.svc.Procs(sid).Procs(r.Context())
	}
	out := ProcList{Procs: make([]ProcInfo, 0, len(list))}
	for _, p := range list {
		out.Procs = append(out.Procs, NewProcInfo(p))
	}
	a.reply(w, r, out, err)
}

func (a *api) getProc(w http.ResponseWriter, r *http.Request, _ domain.ID, procs ports.ProcHost, pid string) {
	info, err := procs.Proc(r.Context(), pid)
	a.reply(w, r, NewProcInfo(info), err)
}

func (a *api) waitProc(w http.ResponseWriter, r *http.Request, _ domain.ID, procs ports.ProcHost, pid string) {
	info, err := procs.WaitProc(r.Context(), pid)
	a.reply(w, r, NewProcInfo(info), err)
}

func (a *api) removeProc(w http.ResponseWriter, r *http.Request, _ domain.ID, procs ports.ProcHost, pid string) {
	a.done(w, r, procs.RemoveProc(r.Context(), pid))
}

func (a *api) signalProc(w http.ResponseWriter, r *http.Request, _ domain.ID, procs ports.ProcHost, pid string) {
	a.done(w, r, procs.SignalProc(r.Context(), pid, r.URL.Query().Get("signal")))
}

func (a *api) resizeProc(w http.ResponseWriter, r *http.Request, _ domain.ID, procs ports.ProcHost, pid string) {
	cols, err := intParam(r, "cols")
	var rows int
	if err == nil {
		rows, err = intParam(r, "rows")
	}
	if err == nil {
		err = procs.ResizeProc(r.Context(), pid, cols, rows)
	}
	a.done(w, r, err)
}

// procStdin streams the request body into the proc's stdin as it arrives
// (Content-Length or chunked); ?close=true closes stdin after it.
func (a *api) procStdin(w http.ResponseWriter, r *http.Request, _ domain.ID, procs ports.ProcHost, pid string) {
	closeAfter, err := boolParam(r, "close")
	if err == nil {
		err = procs.ProcStdin(r.Context(), pid, r.Body, closeAfter)
	}
	a.done(w, r, err)
}

// procOutput answers a proc's output as NDJSON ProcOutputEvents, following
// it live with ?follow=true, as exec:stream answers an exec: a slow client
// holds the read back, one that takes nothing for StreamStallTimeout (or
// is gone) ends it; the proc itself is not touched.
func (a *api) procOutput(w http.ResponseWriter, r *http.Request, sid domain.ID, procs ports.ProcHost, pid string) {
	q, err := outputQuery(r)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if q.Follow {
		release, err := a.stream(sid)
		if err != nil {
			a.fail(w, r, err)
			return
		}
		defer release()
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	out := a.ndjson(w, cancel)
	stop := out.keepAlive()
	info, err := procs.ProcOutput(ctx, pid, q, func(c sandbox.ProcChunk) error {
		if !out.send(ProcOutputEvent{Output: newProcChunk(c)}) {
			return context.Canceled
		}
		return nil
	})
	stop()
	if !out.finish(func() any {
		if err != nil {
			_, code, msg := a.classifyLogged(r, err, err)
			return ProcOutputEvent{Error: &ErrorDetail{Code: code, Message: msg}}
		}
		end := NewProcInfo(info)
		return ProcOutputEvent{End: &end}
	}, err != nil) {
		a.fail(w, r, err)
	}
}

func outputQuery(r *http.Request) (sandbox.ProcOutputQuery, error) {
	q := sandbox.ProcOutputQuery{Stream: r.URL.Query().Get("stream")}
	var err error
	if v := r.URL.Query().Get("from"); v != "" {
		if q.From, err = strconv.ParseInt(v, 10, 64); err != nil || q.From < 0 {
			return q, fmt.Errorf("%w: from: %q is not an offset", session.ErrInvalidRequest, domain.Clip(v))
		}
	}
	q.Follow, err = boolParam(r, "follow")
	return q, err
}

func intParam(r *http.Request, name string) (int, error) {
	v := r.URL.Query().Get(name)
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("%w: %s: %q is not an integer", session.ErrInvalidRequest, name, domain.Clip(v))
	}
	return n, nil
}

// stream takes one of the session's slots of long-lived streams
// (APIOptions.MaxStreams) for as long as an answer lasts; release gives it
// back.
func (a *api) stream(sid domain.ID) (release func(), err error) {
	if !a.streams.acquire(sid) {
		return nil, fmt.Errorf("session %s: %w (at most %d)", sid, ErrTooManyStreams, a.streams.max)
	}
	return func() { a.streams.release(sid) }, nil
}
