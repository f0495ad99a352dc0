// Package ports declares the interfaces between sandgate's core and its
// adapters. Every method's doc names the errors it returns; the sentinels
// live in core/sandbox and are matched with errors.Is. No port mentions a
// Docker or Kubernetes type, so a new backend fits without change.
package ports

import (
	"context"
	"io"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
)

// GateTokenMinter mints a session's gate token in two steps: Generate in
// memory before the gate is created, Persist once the provider won the
// create (C-GATE-2). It is declared in core/sandbox because GateSpec carries
// it; this alias is the port adapters implement.
type GateTokenMinter = sandbox.GateTokenMinter

// GateTokenRevoker revokes a session's gate token; see sandbox.GateTokenRevoker.
type GateTokenRevoker = sandbox.GateTokenRevoker

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
	// a token Persist failure (what this call created is removed).
	Provision(ctx context.Context, spec sandbox.Spec) (Sandbox, error)
	// Attach returns a handle to the session's running (Kubernetes: ready)
	// sandbox. It creates, starts, pulls, waits and heals nothing.
	// Errors: ErrNotFound (never provisioned, reaped, stopped, not ready) with
	// a nil handle; a name held without the ownership label.
	Attach(ctx context.Context, sessionID domain.ID) (Sandbox, error)
	// Owned lists the distinct session ids of every labelled asset (sandbox
	// and gate, running or stopped) on this endpoint. Errors: the endpoint's.
	Owned(ctx context.Context) ([]domain.ID, error)
	// Reap revokes the session's gate token (when a revoker is configured; a
	// failed revoke aborts with nothing removed), then removes every asset
	// carrying the session's label and returns once they are gone. Reaping a
	// session that owns nothing is a no-op. Errors: the revoker's, the
	// endpoint's, or a removal that did not finish within its bound.
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
	// Destroy removes the sandbox; destroying it again is not an error.
	// Errors: the endpoint's.
	Destroy(ctx context.Context) error
}
