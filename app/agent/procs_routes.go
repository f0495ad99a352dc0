package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"syscall"
	"time"

	"github.com/sandgate/sandgate/core/agentwire"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/core/strictjson"
)

// maxProcBody bounds a ProcStart document, as maxExecBody bounds an exec's.
const maxProcBody = maxExecBody

// handleProcs registers the proc routes.
func (s *Server) handleProcs() {
	s.mux.HandleFunc("POST "+agentwire.PathProcs, s.procStart)
	s.mux.HandleFunc("GET "+agentwire.PathProcs, s.procList)
	s.mux.HandleFunc("GET "+agentwire.PathProc, s.withProc(procGet))
	s.mux.HandleFunc("DELETE "+agentwire.PathProc, s.procRemove)
	s.mux.HandleFunc("GET "+agentwire.PathProcOutput, s.withProc(procOutput))
	s.mux.HandleFunc("POST "+agentwire.PathProcStdin, s.withProc(procStdin))
	s.mux.HandleFunc("POST "+agentwire.PathProcSignal, s.withProc(procSignal))
	s.mux.HandleFunc("POST "+agentwire.PathProcResize, s.withProc(procResize))
	s.mux.HandleFunc("GET "+agentwire.PathProcWait, s.withProc(procWait))
}

// procID is the request's {id}, checked for shape.
func procID(r *http.Request) (string, error) {
	id := r.PathValue("id")
	if err := sandbox.ValidateProcID(id); err != nil {
		return "", fmt.Errorf("%w: %w", errInvalid, err)
	}
	return id, nil
}

// withProc resolves the request's proc for h.
func (s *Server) withProc(h func(http.ResponseWriter, *http.Request, *proc)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, err := procID(r)
		if err == nil {
			var p *proc
			if p, err = s.procs.get(id); err == nil {
				h(w, r, p)
				return
			}
		}
		refuse(w, err) // a stdin body is not waited for
	}
}

func (s *Server) procStart(w http.ResponseWriter, r *http.Request) {
	var req agentwire.ProcStart
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxProcBody))
	if err == nil {
		err = strictjson.Unmarshal(body, &req)
	}
	if err != nil {
		writeError(w, r, fmt.Errorf("proc request: %w: %w", errInvalid, err))
		return
	}
	p, err := s.startProc(req)
	if err != nil {
		writeError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	writeJSON(w, p.info())
}

func (s *Server) procList(w http.ResponseWriter, _ *http.Request) {
	infos := []agentwire.ProcInfo{}
	for _, p := range s.procs.list() {
		infos = append(infos, p.info())
	}
	writeJSON(w, infos)
}

func procGet(w http.ResponseWriter, _ *http.Request, p *proc) { writeJSON(w, p.info()) }

func (s *Server) procRemove(w http.ResponseWriter, r *http.Request) {
	id, err := procID(r)
	if err == nil {
		err = s.procs.remove(id)
	}
	if err != nil {
		writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// procWait answers once the proc has exited and its output is drained, so
// that a read after it finds every byte the proc wrote.
func procWait(w http.ResponseWriter, r *http.Request, p *proc) {
	select {
	case <-p.drained:
		writeJSON(w, p.info())
	case <-r.Context().Done():
	}
}

// procSignals maps ProcSignals' names to signals.
var procSignals = map[string]syscall.Signal{
	"TERM": syscall.SIGTERM, "KILL": syscall.SIGKILL, "INT": syscall.SIGINT, "HUP": syscall.SIGHUP,
	"QUIT": syscall.SIGQUIT, "USR1": syscall.SIGUSR1, "USR2": syscall.SIGUSR2, "STOP": syscall.SIGSTOP,
	"CONT": syscall.SIGCONT, "WINCH": syscall.SIGWINCH,
}

// procSignal signals the proc's group. Once its leader is reaped the proc
// has no group of its own any more (the pid, so the group id, may be
// another's), so it is refused.
func procSignal(w http.ResponseWriter, r *http.Request, p *proc) {
	name := r.URL.Query().Get(agentwire.QuerySignal)
	if err := sandbox.ValidateProcSignal(name); err != nil {
		writeError(w, r, fmt.Errorf("%w: %w", errInvalid, err))
		return
	}
	if closed(p.exited) {
		writeError(w, r, fmt.Errorf("proc %s: %w", p.id, sandbox.ErrProcExited))
		return
	}
	if err := syscall.Kill(-p.pid, procSignals[name]); err != nil && !errors.Is(err, syscall.ESRCH) {
		writeError(w, r, fmt.Errorf("proc %s: kill: %w", p.id, err))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func procResize(w http.ResponseWriter, r *http.Request, p *proc) {
	q := r.URL.Query()
	cols, errC := strconv.Atoi(q.Get(agentwire.QueryCols))
	rows, errR := strconv.Atoi(q.Get(agentwire.QueryRows))
	err := sandbox.ValidateTermSize(cols, rows)
	switch {
	case errC != nil || errR != nil:
		err = fmt.Errorf("resize %q x %q: not numbers: %w", q.Get(agentwire.QueryCols), q.Get(agentwire.QueryRows), errInvalid)
	case err != nil:
		err = fmt.Errorf("%w: %w", errInvalid, err)
	case !p.tty:
		err = fmt.Errorf("proc %s has no terminal to resize: %w", p.id, errInvalid)
	default:
		err = setSize(p.stdin, cols, rows)
	}
	if err != nil {
		writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// procStdin copies the body into the proc's stdin as it arrives; a caller
// that goes away ends a write the pipe holds back.
func procStdin(w http.ResponseWriter, r *http.Request, p *proc) {
	closeAfter, err := flag(r, agentwire.QueryClose)
	if err != nil {
		refuse(w, err)
		return
	}
	p.stdinMu.Lock()
	defer p.stdinMu.Unlock()
	if p.stdinClosed {
		refuse(w, fmt.Errorf("proc %s: %w", p.id, sandbox.ErrStdinClosed))
		return
	}
	err = p.feed(r.Context(), r.Body)
	if err == nil && closeAfter {
		err = p.closeStdin()
	}
	switch {
	case r.Context().Err() != nil:
		return // the caller is gone
	case err != nil:
		refuse(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// refuse answers err without draining the body first, as writeError does:
// a stdin body may be endless (a terminal's keystrokes), and the refusal
// must reach its sender while it still sends. The server closes the
// exchange's stream after the answer; the sender's write then fails, and
// its answer is this one.
func refuse(w http.ResponseWriter, err error) {
	doc := wireError(err)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Connection", "close")
	w.WriteHeader(statusOf[doc.Code])
	_ = json.NewEncoder(w).Encode(doc)
}

// feed copies body into stdin; p.stdinMu is held. A failed write is
// classified (nothing reads: stdin closed; freed: not found); a failed
// read of the body is the caller's, returned as it is.
func (p *proc) feed(ctx context.Context, body io.Reader) error {
	done, watched := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case <-ctx.Done():
			_ = p.stdin.SetWriteDeadline(time.Now())
		case <-done:
		}
	}()
	defer func() {
		close(done)
		<-watched
		_ = p.stdin.SetWriteDeadline(time.Time{}) // for the next writer
	}()
	buf := make([]byte, 32<<10)
	for {
		n, rerr := body.Read(buf)
		if n > 0 {
			if _, err := p.stdin.Write(buf[:n]); err != nil {
				return p.stdinFault(err)
			}
		}
		switch {
		case errors.Is(rerr, io.EOF):
			return nil
		case rerr != nil:
			return rerr
		}
	}
}

func (p *proc) stdinFault(err error) error {
	switch {
	case errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.EIO):
		return fmt.Errorf("proc %s: %w", p.id, sandbox.ErrStdinClosed)
	case closed(p.removed):
		return fmt.Errorf("proc %s: %w", p.id, sandbox.ErrProcNotFound)
	}
	return fmt.Errorf("proc %s: stdin: %w", p.id, err)
}

// eofChar is what closing a PTY's stdin sends: the terminal's default VEOF
// (^D), which ends a read at the start of a line in canonical mode.
const eofChar = 0x04

// closeStdin closes the proc's stdin; p.stdinMu is held. A PTY's master
// stays open (it is also the proc's output): it gets the EOF character.
func (p *proc) closeStdin() error {
	p.stdinClosed = true
	if p.tty {
		if _, err := p.stdin.Write([]byte{eofChar}); err != nil {
			return p.stdinFault(err)
		}
		return nil
	}
	return p.stdin.Close()
}
