package agent

import (
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/sandgate/sandgate/core/agentwire"
)

// Server serves agentwire's routes and keeps the process groups of the
// commands it runs, so that the agent can kill them all when its caller is
// gone for good (KillAll).
type Server struct {
	opts Options
	// noPtrace: the ptrace hold failed here once; commands are held by the
	// gate pipe from then on (gated.go).
	noPtrace atomic.Bool
	mux      *http.ServeMux
	mu       sync.Mutex
	groups   map[int]struct{}
	procs    *Procs
	ownProcs bool
}

// Options configure a Server.
type Options struct {
	// Self is the agent's own binary: each command starts as it, held
	// until its pid is reported (gated.go). Empty: commands start at once
	// (tests of the handler alone).
	Self string
	// NoPtrace holds commands with the gate pipe only, never with ptrace
	// (tests of that holder; a host whose audit would log every ptrace).
	NoPtrace bool
	// Procs, when set, is shared with other Servers (a daemon's, one Server
	// per stream): its procs outlive this Server's stream, and KillAll
	// leaves them. Nil: the Server has its own, which KillAll kills.
	Procs *Procs
}

// New returns a Server with every route of agentwire.
func New(opts Options) *Server {
	s := &Server{opts: opts, mux: http.NewServeMux(), groups: map[int]struct{}{}, procs: opts.Procs, ownProcs: opts.Procs == nil}
	if s.ownProcs {
		s.procs = NewProcs()
	}
	s.mux.HandleFunc("GET "+agentwire.PathVersion, version)
	s.mux.HandleFunc("POST "+agentwire.PathExec, s.exec)
	s.mux.HandleFunc("GET "+agentwire.PathFile, readFile)
	s.mux.HandleFunc("PUT "+agentwire.PathFile, writeFile)
	s.mux.HandleFunc("PUT "+agentwire.PathFiles, writeFiles)
	s.mux.HandleFunc("GET "+agentwire.PathStat, stat)
	s.mux.HandleFunc("GET "+agentwire.PathList, list)
	s.mux.HandleFunc("POST "+agentwire.PathRemove, remove)
	s.mux.HandleFunc("POST "+agentwire.PathMkdir, mkdir)
	s.mux.HandleFunc("POST "+agentwire.PathStage, stageFile)
	s.mux.HandleFunc("POST "+agentwire.PathLand, landFile)
	s.mux.HandleFunc("POST "+agentwire.PathFilesStage, stageFiles)
	s.mux.HandleFunc("POST "+agentwire.PathFilesLand, landFiles)
	s.handleProcs()
	s.mux.HandleFunc("POST "+agentwire.PathForward, forward)
	return s
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// KillAll SIGKILLs the process group of every command still running, and
// of its own procs (not shared ones): what the agent does when its stdin
// ends (the executor or the engine went away), as the fallback wrapper's
// lifeline does for its one command.
func (s *Server) KillAll() {
	if s.ownProcs {
		s.procs.KillAll()
	}
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
