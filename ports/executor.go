package ports

import (
	"context"
	"io"
	"net"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/core/session"
)

// Session states reported in SessionInfo.State.
const (
	// StateRunning: the session's sandbox is running (Attach finds it).
	StateRunning = "running"
	// StateStopped: the endpoint holds labelled assets of the session but no
	// running sandbox (it stopped, or a provision or reap is half done).
	StateStopped = "stopped"
)

// SessionInfo is what the executor reports about one session (its JSON
// form lives at the HTTP edge, in adapters/httpapi).
type SessionInfo struct {
	ID domain.ID
	// SandboxID is the backend's id of the sandbox (a container id, a pod
	// name); empty when it is not running.
	SandboxID string
	// Image and Workdir are the session record's (any executor sharing the
	// store reports them); empty when no record is stored.
	Image   string
	Workdir string
	// Networking is the stored policy, when a record is stored.
	Networking *domain.Networking
	// Isolation is the sandbox's runtime, when a record is stored.
	Isolation sandbox.Isolation
	// Gated reports whether the sandbox runs behind an egress gate.
	Gated bool
	// State is StateRunning or StateStopped.
	State string
}

// Service is the executor's application service: what the HTTP API (and
// its Go client, which implements it across the wire) drives. Session ids
// are domain.IDs, valid by construction: the API parses the path's id and
// answers a malformed one with domain.ErrInvalidID wrapped in
// session.ErrInvalidRequest before any call. Every method but Provision and List answers
// sandbox.ErrNotFound for a session with no running sandbox.
type Service interface {
	// Provision stores the session's record and returns its sandbox, created
	// or adopted (idempotent), with the session's checkpoint, if any and if
	// the session had no sandbox, restored into its workdir. Errors:
	// ErrBadCheckpoint (an unreadable checkpoint: nothing created or
	// removed, the checkpoint kept); session.ErrInvalidRequest naming the
	// field; session.ErrGateUnavailable; sandbox.ErrSpecMismatch (the
	// running sandbox differs in image, workdir or ungated network; nothing
	// is changed, the stored record included); the provider's and store's.
	Provision(ctx context.Context, sid domain.ID, req session.Request) (SessionInfo, error)
	// Get returns a running session. Errors: sandbox.ErrNotFound.
	Get(ctx context.Context, sid domain.ID) (SessionInfo, error)
	// Delete revokes the session's gate token, deletes its checkpoint and
	// its stored record, then removes its sandbox and gate (a store failure
	// leaves the sandbox and record as they were); deleting a session that
	// has none is a no-op. With checkpoint, the workspace is kept instead:
	// the workdir of a sandbox (running or stopped) is stored first, or
	// without a sandbox the stored checkpoint is kept (the next Provision
	// restores it); a checkpoint that cannot be taken fails the delete with
	// the session left running. Errors: ErrNotImplemented for
	// checkpoint=true without a checkpoint store; ErrCheckpointTooLarge;
	// sandbox.ErrNotFound (checkpoint=true, neither a sandbox nor a
	// checkpoint); the store's; the provider's.
	Delete(ctx context.Context, sid domain.ID, checkpoint bool) error
	// List returns every session with labelled assets on the endpoint, with
	// its state, sorted by id.
	List(ctx context.Context) ([]SessionInfo, error)
	// Exec runs one command (Sandbox.Exec). Errors: session.ErrInvalidRequest
	// (sandbox.ErrInvalidExec); sandbox.ErrNotFound; the sandbox's.
	Exec(ctx context.Context, sid domain.ID, req sandbox.ExecRequest) (sandbox.ExecResult, error)
	// ReadFile streams a regular file with its exact size
	// (Sandbox.ReadFileStream). Errors: session.ErrInvalidRequest for a bad
	// path or maxBytes; the path sentinels; sandbox.ErrFileTooLarge.
	ReadFile(ctx context.Context, sid domain.ID, path string, maxBytes int64) (io.ReadCloser, int64, error)
	// WriteFile writes exactly size bytes from src atomically
	// (Sandbox.WriteFileStream). Errors: session.ErrInvalidRequest for a bad
	// path or a negative size; the path sentinels; a short src.
	WriteFile(ctx context.Context, sid domain.ID, path string, src io.Reader, size int64) error
	// WriteFiles writes a batch (Sandbox.WriteFiles; not a transaction).
	// Errors: session.ErrInvalidRequest naming the member with a bad path;
	// the path sentinels, wrapped with the failing member's path.
	WriteFiles(ctx context.Context, sid domain.ID, files []sandbox.FileWrite) error
	// Export streams root as a tar whose members live under path.Base(root)
	// (Provider.Export). Errors: session.ErrInvalidRequest for a bad root;
	// sandbox.ErrFileNotExist; sandbox.ErrNotFound.
	Export(ctx context.Context, sid domain.ID, root string) (io.ReadCloser, error)
	// Stat describes a path without following a final symlink
	// (Sandbox.Stat; "/" is valid). Errors: session.ErrInvalidRequest for a
	// bad path; the path sentinels; sandbox.ErrNotReadable.
	Stat(ctx context.Context, sid domain.ID, path string) (sandbox.FileInfo, error)
	// ListDir lists a directory's entries, sorted by name (Sandbox.List).
	// Errors: Stat's; sandbox.ErrNotDirectory for a non-directory;
	// sandbox.ErrTooManyEntries (matching sandbox.ErrFileTooLarge).
	ListDir(ctx context.Context, sid domain.ID, path string) ([]sandbox.FileInfo, error)
	// Remove removes a file, a symlink, an empty directory or, with
	// recursive, a tree (Sandbox.Remove). Errors: session.ErrInvalidRequest
	// for a bad path or "/"; the path sentinels (sandbox.ErrIsDirectory for
	// a non-empty directory without recursive, sandbox.ErrNotReplaceable
	// for a mount point); *sandbox.PathNotWritableError.
	Remove(ctx context.Context, sid domain.ID, path string, recursive bool) error
	// Mkdir creates a directory 0755, with its parents when asked
	// (Sandbox.Mkdir). Errors: session.ErrInvalidRequest for a bad path;
	// sandbox.ErrIsDirectory (it exists, without parents);
	// sandbox.ErrFileNotExist (a missing parent, without parents);
	// sandbox.ErrNotDirectory; *sandbox.PathNotWritableError.
	Mkdir(ctx context.Context, sid domain.ID, path string, parents bool) error
	// DialPort connects to a TCP port listening on the sandbox's loopback
	// (Sandbox.DialPort); the session is busy (not reapable) until the
	// connection is closed. Errors: session.ErrInvalidRequest
	// (sandbox.ErrInvalidPort); sandbox.ErrPortClosed; sandbox.ErrNoAgent;
	// sandbox.ErrNotFound.
	DialPort(ctx context.Context, sid domain.ID, port int) (net.Conn, error)
	// Procs is the session's procs (ProcHost, over Sandbox's): each call
	// is a tracked call on the session, refused before anything is sent
	// when its input is malformed (sandbox.ErrInvalidProc).
	Procs(sid domain.ID) ProcHost
}
