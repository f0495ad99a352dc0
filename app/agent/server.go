package agent

import (
	"io"
	"net/http"
	"sync"
	"syscall"

	"github.com/sandgate/sandgate/core/agentwire"
)

// Server serves agentwire's routes and keeps the process groups of the
// commands it runs, so that the agent can kill them all when its caller is
// gone for good (KillAll).
type Server struct {
	opts   Options
	mux    *http.ServeMux
	mu     sync.Mutex
	groups map[int]struct{}
}

// Options configure a Server.
type Options struct {
	// Self is the agent's own binary: each command starts as it, held
	// until its pid is reported (gated.go). Empty: commands start at once
	// (tests of the handler alone).
	Self string
}

// New returns a Server with every route of agentwire.
func New(opts Options) *Server {
	s := &Server{opts: opts, mux: http.NewServeMux(), groups: map[int]struct{}{}}
	s.mux.HandleFunc("GET "+agentwire.PathVersion, version)
	s.mux.HandleFunc("POST "+agentwire.PathExec, s.exec)
	s.mux.HandleFunc("GET "+agentwire.PathFile, readFile)
	s.mux.HandleFunc("PUT "+agentwire.PathFile, writeFile)
	s.mux.HandleFunc("PUT "+agentwire.PathFiles, writeFiles)
	s.mux.HandleFunc("GET "+agentwire.PathStat, stat)
	s.mux.HandleFunc("GET "+agentwire.PathList, list)
	s.mux.HandleFunc("POST "+agentwire.PathRemove, remove)
	s.mux.HandleFunc("POST "+agentwire.PathMkdir, mkdir)
	return s
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// KillAll SIGKILLs the process group of every command still running: what
// the agent does when its stdin ends (the executor or the engine went
// away), as the fallback wrapper's lifeline does for its one command.
func (s *Server) KillAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for pgid := range s.groups {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
}

// Running is the number of commands still running.
func (s *Server) Running() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.groups)
}

func (s *Server) track(pgid int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.groups[pgid] = struct{}{}
}

func (s *Server) untrack(pgid int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.groups, pgid)
}

func version(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.WriteString(w, agentwire.Version)
}
