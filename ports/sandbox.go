// Package ports declares the interfaces between sandgate's core and its
// adapters. Every method's doc names the errors it returns; the sentinels
// live in core/sandbox and are matched with errors.Is. No port mentions a
// Docker or Kubernetes type, so a new backend fits without change.
package ports

import (
	"context"
	"io"
	"net"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
)

// GateTokenIssuer is what a provider needs of the control plane's gate
// tokens: it is handed to the provider at construction (its Options), never
// inside a Spec. Generate and Persist mint a gated sandbox's token in two
// steps (C-GATE-2); Revoke retires it (C-REAP-1, and a gated→ungated
// reshape).
type GateTokenIssuer interface {
	// Generate returns a fresh gate token in memory, with no durable effect;
	// the provider calls it before creating the gate.
	Generate() string
	// Persist records token as sessionID's live gate token (by hash),
	// revoking the previous one. The provider calls it only after it won
	// the gate's create with that token, so an adoption never revokes the
	// token a running gate uses. It returns the store's error unchanged.
	Persist(ctx context.Context, sessionID domain.ID, token string) error
	// Revoke makes the session's token fail authentication at once.
	// Revoking a session with no token is not an error.
	Revoke(ctx context.Context, sessionID domain.ID) error
}

// Provider creates, finds and removes sessions' sandboxes on one endpoint (a
// Docker daemon, a Kubernetes namespace). Every method validates its input
// before any side effect; invalid input is an error that names the field.
type Provider interface {
	// Provision returns the session's sandbox, creating it only if none is
	// running; concurrent calls for one session converge on one sandbox.
	// An existing sandbox is adopted when image, workdir and (ungated) network
	// shape match, rebuilt on a gate reshape or a stale gate pairing.
	// Errors: invalid spec (before anything is created); ErrSpecMismatch naming
	// the field (nothing removed or changed); a name held by a container/pod
	// without the ownership label; an image that cannot be found or pulled;
	// a gated spec on a provider without a GateTokenIssuer (before anything
	// is created); a token Persist failure (what this call created is
	// removed).
	Provision(ctx context.Context, spec sandbox.Spec) (Sandbox, error)
	// Attach returns a handle to the session's running (Kubernetes: ready)
	// sandbox. It creates, starts, pulls, waits and heals nothing.
	// Errors: ErrNotFound (never provisioned, reaped, stopped, not ready) with
	// a nil handle; a name held without the ownership label.
	Attach(ctx context.Context, sessionID domain.ID) (Sandbox, error)
	// Owned lists the distinct session ids of every labelled asset (sandbox
	// and gate, running or stopped) on this endpoint. Errors: the endpoint's.
	Owned(ctx context.Context) ([]domain.ID, error)
	// Reap revokes the session's gate token (when the provider has a
	// GateTokenIssuer; a failed revoke aborts with nothing removed), then
	// removes every asset carrying the session's label and returns once they
	// are gone. Reaping a session that owns nothing is a no-op. Reap is the
	// one owner of revoke-before-reap: callers (the application service,
	// the reaper) do not revoke before calling it, because the provider also
	// owns the order in which gate and sandbox are torn down. Errors: the
	// issuer's, the endpoint's, or a removal that did not finish within its
	// bound.
	Reap(ctx context.Context, sessionID domain.ID) error
	// Export streams root out of the sandbox as an uncompressed tar whose
	// members live under one directory named path.Base(root). The caller
	// closes the stream; a failure mid-stream surfaces on Read.
	// Errors: ErrFileNotExist (root missing); ErrNotFound (no sandbox);
	// a name held without the ownership label.
	Export(ctx context.Context, sessionID domain.ID, root string) (io.ReadCloser, error)
}

// Sandbox is a handle to one running sandbox. Every method returns
// ErrNotFound once the sandbox is gone, and the context's error when it is
// cancelled. Paths are absolute.
type Sandbox interface {
	// ID identifies the sandbox to the backend (a container id, a pod name).
	ID() string
	// ProcHost: the sandbox's procs, over its agent (sandbox.ErrNoAgent
	// without one).
	ProcHost
	// Exec runs req.Command with /bin/bash -c in the workdir. A non-zero
	// exit, stderr output and a deadline kill are results (ExecResult), not
	// errors. Errors: invalid request; ErrNotFound; the context's; transport.
	Exec(ctx context.Context, req sandbox.ExecRequest) (sandbox.ExecResult, error)
	// ReadFile returns a regular file's bytes verbatim, at most MaxFileBytes.
	// Errors: ErrFileNotExist, ErrIsDirectory, ErrNotRegularFile (FIFO,
	// socket, device, symlink — never followed), ErrNotDirectory (a
	// non-directory in the parent chain), ErrFileTooLarge, ErrNotFound.
	ReadFile(ctx context.Context, path string) ([]byte, error)
	// ReadFileStream returns a regular file's bytes as a stream with their
	// exact count, refusing a file above maxBytes with ErrFileTooLarge before
	// any byte travels; the other errors are ReadFile's. The caller closes the
	// reader; memory use is bounded whatever the size.
	ReadFileStream(ctx context.Context, path string, maxBytes int64) (io.ReadCloser, int64, error)
	// WriteFile atomically writes data (temp beside the target, then rename),
	// creating parents (0755) and overwriting; an existing regular target's
	// mode is kept, a new file lands 0644. Errors: ErrIsDirectory,
	// ErrNotDirectory, ErrNotReplaceable (device node, mount point),
	// *PathNotWritableError (ErrNotWritable, with the strerror), ErrNotFound.
	// A failure leaves the target as it was and no temporary file.
	WriteFile(ctx context.Context, path string, data []byte) error
	// WriteFileStream writes exactly size bytes from src like WriteFile,
	// without buffering the payload. Errors: WriteFile's; ErrSizeNotALength
	// for size < 0 (before src is read or anything is created); a short or
	// long src (the target keeps its old content).
	WriteFileStream(ctx context.Context, path string, src io.Reader, size int64) error
	// WriteFiles writes a batch in a fixed couple of round trips, each member
	// as WriteFile would (without the unreplaceable probe). Not a
	// transaction: the first failing member stops the run, earlier members
	// stay, later ones are never written; a short delivery or a blocked parent
	// lands nothing. Errors: an invalid member path (before delivery);
	// WriteFile's sentinels wrapped with the failing member's path (best
	// effort); ErrNotFound.
	WriteFiles(ctx context.Context, files []sandbox.FileWrite) error
	// Stat describes path as lstat(2) does: a symlink is described, never
	// followed; Name is path. "/" is valid. Errors: an invalid path (before
	// anything runs); ErrFileNotExist; ErrNotDirectory (a non-directory in
	// the parent chain); ErrNotReadable (an ancestor the sandbox's user
	// cannot search, with the strerror); ErrNotFound (C-FS-1).
	Stat(ctx context.Context, path string) (sandbox.FileInfo, error)
	// List returns the entries of directory path (or of the directory a
	// symlink at path names, as ls does), each lstat'ed (Name its base
	// name), sorted by name byte-wise; "." and ".." are not entries.
	// Errors: Stat's; ErrNotDirectory when path is not a directory;
	// ErrNotReadable when the directory cannot be read or searched;
	// ErrTooManyEntries (matching ErrFileTooLarge) above MaxListEntries
	// entries or MaxListBytes of listing, never a partial list (C-FS-2).
	List(ctx context.Context, path string) ([]sandbox.FileInfo, error)
	// Remove removes a file, a symlink (never what it names) or an empty
	// directory; with recursive, a directory and everything under it
	// (rm -rf, which crosses into mounts below it). Errors: an invalid path,
	// "/" included (before anything runs); ErrFileNotExist; ErrNotDirectory
	// (parent chain); ErrIsDirectory (a non-empty directory without
	// recursive); ErrNotReplaceable (a mount point); *PathNotWritableError
	// (with the strerror, e.g. a read-only mount such as the agent's; a
	// recursive remove may have removed part of the tree); ErrNotFound
	// (C-FS-3).
	Remove(ctx context.Context, path string, recursive bool) error
	// Mkdir creates directory path, 0755 whatever the umask; with parents,
	// its missing ancestors too (0755), and an existing directory (or a
	// symlink to one) is success, as mkdir -p has it. Errors: an invalid
	// path; ErrIsDirectory (path exists as a directory, without parents);
	// ErrFileNotExist (a missing parent, without parents); ErrNotDirectory
	// (path or an ancestor is a non-directory, a dangling symlink too);
	// *PathNotWritableError; ErrNotFound (C-FS-4).
	Mkdir(ctx context.Context, path string, parents bool) error
	// DialPort connects to a TCP port listening on the sandbox's own
	// loopback (127.0.0.1, else ::1), through the in-sandbox agent, whatever
	// the sandbox's networking: nothing is opened to the outside. ctx bounds
	// the dial, not the connection; the caller closes it, and a CloseWrite
	// (the connection has one) passes its end of input on. Errors:
	// sandbox.ErrInvalidPort (outside 1..65535, before anything runs);
	// sandbox.ErrPortClosed (nothing listens); sandbox.ErrNoAgent (a
	// sandbox without the agent); ErrNotFound (C-PORT-1).
	DialPort(ctx context.Context, port int) (net.Conn, error)
	// Destroy removes the sandbox; destroying it again is not an error.
	// Errors: the endpoint's.
	Destroy(ctx context.Context) error
}
