package mcpserver

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/core/session"
	"github.com/sandgate/sandgate/ports"
)

// CreateArgs are create_sandbox's arguments.
type CreateArgs struct {
	SessionID    string            `json:"session_id,omitempty" jsonschema:"optional id of your choosing (lower-case letters, digits and inner _, at most 54); a fresh one is made when absent"`
	Image        string            `json:"image,omitempty" jsonschema:"container image, e.g. python:3.12 (absent: the server's default image)"`
	Workdir      string            `json:"workdir,omitempty" jsonschema:"absolute working directory of commands (absent: /workspace)"`
	AllowedHosts []string          `json:"allowed_hosts,omitempty" jsonschema:"hosts the sandbox may reach, e.g. pypi.org or *.githubusercontent.com or api.example.com:8443; absent or empty: no network at all"`
	Unrestricted bool              `json:"unrestricted_network,omitempty" jsonschema:"full network access instead of an allowlist, if the server permits it"`
	Env          map[string]string `json:"env,omitempty" jsonschema:"environment variables of every command (no secrets here: use credentials)"`
	Credentials  []string          `json:"credentials,omitempty" jsonschema:"ids of credentials the server holds; each is injected at egress to its own hosts and the sandbox sees a placeholder in its variable"`
}

// SessionOut describes a sandbox.
type SessionOut struct {
	SessionID    string   `json:"session_id"`
	Image        string   `json:"image,omitempty"`
	Workdir      string   `json:"workdir,omitempty"`
	Network      string   `json:"network" jsonschema:"unrestricted or limited"`
	AllowedHosts []string `json:"allowed_hosts,omitempty"`
	Gated        bool     `json:"gated" jsonschema:"egress goes through sandgate's gate"`
	State        string   `json:"state"`
}

// SessionArgs name a sandbox.
type SessionArgs struct {
	SessionID string `json:"session_id" jsonschema:"the id create_sandbox returned"`
}

// ListOut lists the sandboxes.
type ListOut struct {
	Sandboxes []SessionOut `json:"sandboxes"`
}

// DeletedOut confirms a deletion.
type DeletedOut struct {
	Deleted string `json:"deleted"`
}

// ExecArgs are exec's arguments.
type ExecArgs struct {
	SessionID      string `json:"session_id" jsonschema:"the id create_sandbox returned"`
	Command        string `json:"command" jsonschema:"a bash command line, e.g. 'cd src && make test 2>&1 | tail -50'"`
	TimeoutSeconds int    `json:"timeout_seconds,omitempty" jsonschema:"kill the command after this many seconds (default 120, at most 3600)"`
}

// ExecOut is a command's result.
type ExecOut struct {
	ExitCode int    `json:"exit_code" jsonschema:"the command's exit status; 124 when it timed out"`
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
	TimedOut bool   `json:"timed_out,omitempty"`
	// Truncated: the executor's own cap or this server's clipped a stream.
	Truncated bool `json:"truncated,omitempty" jsonschema:"output was cut: the middle of a long stream is left out; redirect to a file and read parts of it"`
}

func (s *server) addSessionTools(srv *mcp.Server) {
	mcp.AddTool(srv, &mcp.Tool{Name: "create_sandbox", Description: `Create a new, empty Linux sandbox and return its session_id.
Network is closed unless you list allowed_hosts (only those hosts are reachable). Name credentials by id to give the
sandbox authenticated access without seeing the secret. Creating takes a few seconds.`}, s.create)
	mcp.AddTool(srv, &mcp.Tool{Name: "exec", Description: `Run a bash command in a sandbox and return its exit code, stdout and stderr.
Each call is a fresh bash -c in the working directory (use && or cd within one command; files persist between calls).
Long output is cut in the middle: pipe through tail, head or grep, or write to a file and read it.`}, s.exec)
	mcp.AddTool(srv, &mcp.Tool{Name: "list_sandboxes", Description: "List the sandboxes of this executor with their state and network policy.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, s.list)
	mcp.AddTool(srv, &mcp.Tool{Name: "delete_sandbox", Description: "Delete a sandbox and everything in it. Export what you need first.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true), IdempotentHint: true}}, s.delete)
}

func (s *server) create(ctx context.Context, _ *mcp.CallToolRequest, in CreateArgs) (*mcp.CallToolResult, SessionOut, error) {
	sid := domain.NewID("ses")
	if in.SessionID != "" {
		var err error
		if sid, err = domain.ParseSessionID(in.SessionID); err != nil {
			return nil, SessionOut{}, toolError("create_sandbox", err)
		}
	}
	req, err := s.request(in)
	if err != nil {
		return nil, SessionOut{}, err
	}
	info, err := s.cl.Provision(ctx, sid, req)
	if err != nil {
		return nil, SessionOut{}, toolError("create_sandbox", err)
	}
	return nil, sessionOut(info), nil
}

// request builds the session request, with the named credentials' secrets
// filled in from the server's own list.
func (s *server) request(in CreateArgs) (session.Request, error) {
	req := session.Request{Image: in.Image, Workdir: in.Workdir, Env: in.Env}
	if req.Image == "" {
		req.Image = s.opts.DefaultImage
	}
	switch {
	case in.Unrestricted && len(in.AllowedHosts) > 0:
		return req, fmt.Errorf("create_sandbox failed: invalid_argument: give allowed_hosts or unrestricted_network, not both")
	case in.Unrestricted && !s.opts.AllowUnrestricted:
		return req, fmt.Errorf("create_sandbox failed: not permitted: this server offers only allowlisted networking; list the hosts you need in allowed_hosts")
	case in.Unrestricted:
		req.Networking = domain.Networking{Type: domain.NetUnrestricted}
	default:
		req.Networking = domain.Networking{Type: domain.NetLimited, AllowedHosts: in.AllowedHosts}
	}
	for _, id := range in.Credentials {
		i := slices.IndexFunc(s.opts.Credentials, func(c session.Credential) bool { return c.ID == id })
		if i < 0 {
			return req, fmt.Errorf("create_sandbox failed: invalid_argument: no credential %q on this server (it has: %s)", id, s.credentialIDs())
		}
		req.Credentials = append(req.Credentials, s.opts.Credentials[i])
	}
	return req, nil
}

func (s *server) credentialIDs() string {
	if len(s.opts.Credentials) == 0 {
		return "none"
	}
	ids := make([]string, len(s.opts.Credentials))
	for i, c := range s.opts.Credentials {
		ids[i] = c.ID
	}
	return strings.Join(ids, ", ")
}

func (s *server) exec(ctx context.Context, _ *mcp.CallToolRequest, in ExecArgs) (*mcp.CallToolResult, ExecOut, error) {
	sid, err := domain.ParseSessionID(in.SessionID)
	if err != nil {
		return nil, ExecOut{}, toolError("exec", err)
	}
	t := in.TimeoutSeconds
	switch {
	case t == 0:
		t = DefaultExecTimeoutSeconds
	case t < 0 || t > MaxExecTimeoutSeconds:
		return nil, ExecOut{}, fmt.Errorf("exec failed: invalid_argument: timeout_seconds must be 1..%d", MaxExecTimeoutSeconds)
	}
	res, err := s.cl.Exec(ctx, sid, sandbox.ExecRequest{Command: in.Command, Timeout: time.Duration(t) * time.Second})
	if err != nil {
		return nil, ExecOut{}, toolError("exec", err)
	}
	out := ExecOut{ExitCode: res.ExitCode, TimedOut: res.TimedOut, Truncated: res.Truncated}
	var cut1, cut2 bool
	out.Stdout, cut1 = clipMiddle(res.Stdout, s.opts.MaxOutputBytes)
	out.Stderr, cut2 = clipMiddle(res.Stderr, s.opts.MaxOutputBytes)
	out.Truncated = out.Truncated || cut1 || cut2
	if res.TimedOut {
		out.ExitCode = 124
	}
	return nil, out, nil
}

func (s *server) list(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, ListOut, error) {
	infos, err := s.cl.List(ctx)
	if err != nil {
		return nil, ListOut{}, toolError("list_sandboxes", err)
	}
	out := ListOut{Sandboxes: []SessionOut{}}
	for _, info := range infos {
		out.Sandboxes = append(out.Sandboxes, sessionOut(info))
	}
	return nil, out, nil
}

func (s *server) delete(ctx context.Context, _ *mcp.CallToolRequest, in SessionArgs) (*mcp.CallToolResult, DeletedOut, error) {
	sid, err := domain.ParseSessionID(in.SessionID)
	if err != nil {
		return nil, DeletedOut{}, toolError("delete_sandbox", err)
	}
	if err := s.cl.Delete(ctx, sid, false); err != nil {
		return nil, DeletedOut{}, toolError("delete_sandbox", err)
	}
	return nil, DeletedOut{Deleted: sid.String()}, nil
}

func sessionOut(info ports.SessionInfo) SessionOut {
	out := SessionOut{SessionID: info.ID.String(), Image: info.Image, Workdir: info.Workdir, Gated: info.Gated, State: info.State}
	if info.Networking != nil {
		out.Network = string(info.Networking.Type)
		out.AllowedHosts = info.Networking.AllowedHosts
	}
	return out
}

// clipMiddle keeps the first and last halves of max bytes of s, with a
// marker between, at rune boundaries: a command's first lines say what it
// did and its last ones how it ended.
func clipMiddle(s string, max int) (string, bool) {
	if len(s) <= max {
		return s, false
	}
	head, tail := max/2, max-max/2
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	start := len(s) - tail
	for start < len(s) && !utf8.RuneStart(s[start]) {
		start++
	}
	return fmt.Sprintf("%s\n[… %d bytes left out …]\n%s", s[:head], start-head, s[start:]), true
}

func ptr[T any](v T) *T { return &v }
