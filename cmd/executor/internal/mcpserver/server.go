// Package mcpserver serves sandgate's sandboxes to Model Context Protocol
// clients (Claude Desktop, Claude Code, Cursor, agent frameworks): tools to
// create a sandbox, run commands, read, write and list files, export the
// workspace and delete it, and a resource template for a sandbox's files.
//
// It drives a running executor through its HTTP API (httpapi.Client), so it
// holds no sandbox state and works against a remote executor as well as a
// local one. Secrets never pass through a tool argument: the operator names
// the credentials when starting the server (executor mcp --credential …),
// and a model asks for them by id; the gate injects them at egress, so
// neither the model nor the sandbox ever sees them.
//
// Output a model reads is bounded (Options.MaxOutputBytes per stream or
// file, Options.MaxExportBytes for an export) and marked when cut: a model's
// context is small, and a command may print gigabytes.
package mcpserver

import (
	"errors"
	"fmt"
	"io"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandgate/sandgate/adapters/httpapi"
	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/session"
)

// Defaults of Options' bounds.
const (
	DefaultMaxOutputBytes = 64 << 10
	DefaultMaxExportBytes = 16 << 20
	// DefaultExecTimeoutSeconds is an exec's deadline when the model names
	// none: a model waiting on a hung command is stuck.
	DefaultExecTimeoutSeconds = 120
	// MaxExecTimeoutSeconds bounds the deadline a model may ask for.
	MaxExecTimeoutSeconds = 3600
)

// Options configure a server.
type Options struct {
	// Version is the server's version, as `executor version` prints it.
	Version string
	// Credentials are the secrets a model may ask a sandbox to use, by id.
	Credentials []session.Credential
	// AllowUnrestricted lets a model create a sandbox with unrestricted
	// egress; without it only limited networking (an allowlist, possibly
	// empty) is offered.
	AllowUnrestricted bool
	// DefaultImage is the image of a sandbox whose creator names none
	// (empty: the executor's default).
	DefaultImage string
	// MaxOutputBytes bounds each of an exec's streams and a file read
	// (0: DefaultMaxOutputBytes).
	MaxOutputBytes int
	// MaxExportBytes bounds an export's archive (0: DefaultMaxExportBytes).
	MaxExportBytes int64
}

// server holds what the tools share.
type server struct {
	cl   *httpapi.Client
	opts Options
}

// New returns an MCP server whose tools and resources act through cl.
func New(cl *httpapi.Client, opts Options) *mcp.Server {
	if opts.MaxOutputBytes <= 0 {
		opts.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if opts.MaxExportBytes <= 0 {
		opts.MaxExportBytes = DefaultMaxExportBytes
	}
	s := &server{cl: cl, opts: opts}
	srv := mcp.NewServer(&mcp.Implementation{Name: "sandgate", Title: "sandgate sandboxes", Version: opts.Version},
		&mcp.ServerOptions{Instructions: instructions})
	s.addSessionTools(srv)
	s.addFileTools(srv)
	s.addResources(srv)
	return srv
}

// instructions tell a model how the tools fit together.
const instructions = `sandgate gives you disposable Linux sandboxes (Debian-like containers) to run code in.
Start with create_sandbox; pass its session_id to every other tool. Commands run with bash -c in
the sandbox's working directory (default /workspace). A sandbox reaches only the hosts it was
created with (allowed_hosts); credentials are named by id and injected outside the sandbox, so
the sandbox only ever sees a placeholder. Delete the sandbox with delete_sandbox when done.`

// toolError turns an API error into the text a model reads: the stable
// code first, so it can tell a missing file from a bad path.
func toolError(op string, err error) error {
	var ae *httpapi.APIError
	if errors.As(err, &ae) {
		return fmt.Errorf("%s failed: %s: %s", op, ae.Code, ae.Message)
	}
	if errors.Is(err, domain.ErrInvalidID) || errors.Is(err, session.ErrInvalidRequest) {
		return fmt.Errorf("%s failed: invalid_argument: %w", op, err)
	}
	return fmt.Errorf("%s failed: %w", op, err)
}

// readCapped reads at most limit bytes of r and reports whether more
// followed.
func readCapped(r io.Reader, limit int64) ([]byte, bool, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, false, err
	}
	if int64(len(b)) > limit {
		return b[:limit], true, nil
	}
	return b, false, nil
}
