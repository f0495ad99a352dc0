package agentclient

import (
	"sync"

	"github.com/sandgate/sandgate/core/agentwire"
)

// Registry holds one Conn per session: a provider's agents. A Conn is
// keyed by the session and tagged with the sandbox it talks to (a
// container id, a pod UID), so a rebuilt sandbox gets a fresh agent and
// the old one is stopped.
type Registry struct {
	mu    sync.Mutex
	conns map[string]entry
}

type entry struct {
	sandbox string
	conn    *Conn
}

// Get returns the session's Conn to sandbox, making it with open on first
// use; a Conn of another sandbox of the session is closed.
func (r *Registry) Get(session, sandbox string, open Opener) *Conn {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.conns[session]; ok {
		if e.sandbox == sandbox {
			return e.conn
		}
		_ = e.conn.Close()
	}
	if r.conns == nil {
		r.conns = map[string]entry{}
	}
	c := New(open)
	r.conns[session] = entry{sandbox: sandbox, conn: c}
	return c
}

// Forget closes the session's Conn: any, when sandbox is empty, else only
// the one to that sandbox.
func (r *Registry) Forget(session, sandbox string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.conns[session]; ok && (sandbox == "" || e.sandbox == sandbox) {
		_ = e.conn.Close()
		delete(r.conns, session)
	}
}

// Close closes every Conn. The registry stays usable.
func (r *Registry) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for s, e := range r.conns {
		_ = e.conn.Close()
		delete(r.conns, s)
	}
}

// Launch is how a provider starts the agent in a sandbox (its engine id):
// with an agent key (key's result), as a relay to the sandbox's daemon, whose procs
// outlive the stream, with hello the first bytes of the exec's stdin;
// without one, as `serve`, which takes its procs with it when the stream
// ends, and hello is empty.
func Launch(key func() []byte, sandbox string) (argv []string, hello string) {
	if key == nil || len(key()) == 0 {
		return agentwire.Argv(), ""
	}
	return agentwire.RelayArgv(), agentwire.Token(key(), sandbox) + "\n"
}
