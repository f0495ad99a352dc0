package portfake

import (
	"bytes"
	"context"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/ports"
)

// Sandbox is one session's sandbox of a Provider: files in memory, the
// execs it ran, and an echo for a shell. Its methods run the Provider's
// hooks and faults first, with the sandbox's session.
type Sandbox struct {
	id   string
	sid  domain.ID
	prov *Provider
	// gone is set by Reap: every call answers ErrNotFound from then on.
	gone    atomic.Bool
	mu      sync.Mutex
	running bool
	files   map[string][]byte
	dirs    map[string]bool // made by Mkdir; a file's ancestors are directories too
	execs   []sandbox.ExecRequest
	servers map[int]func(net.Conn) // Serve's, by port
	// ProcTable is the sandbox's procs (in memory, without faults).
	ProcTable
}

var _ ports.Sandbox = (*Sandbox)(nil)

func newSandbox(p *Provider, sid domain.ID) *Sandbox {
	return &Sandbox{id: "ctr-" + sid.String(), sid: sid, prov: p, files: map[string][]byte{}, dirs: map[string]bool{}}
}

// ID is "ctr-" and the session id.
func (b *Sandbox) ID() string { return b.id }

// enter runs the provider's hook and fault for op, then answers
// ErrNotFound for a reaped sandbox.
func (b *Sandbox) enter(ctx context.Context, op Op) error {
	if err := b.prov.enter(ctx, op, b.sid); err != nil {
		return err
	}
	if b.gone.Load() {
		return sandbox.ErrNotFound
	}
	return nil
}

// Exec records req and echoes the command as stdout with exit code 3 (a
// result, not an error, whatever the command), except a script that starts
// with "set -e" (the service's restore), which succeeds silently. A
// streamed exec (req.Output) streams its stdout before the hook and fault
// strike: a sandbox lost while its command ran.
func (b *Sandbox) Exec(ctx context.Context, req sandbox.ExecRequest) (sandbox.ExecResult, error) {
	stdout, stderr := sandbox.NewExecCaptures(req)
	if req.Output != nil {
		_, _ = stdout.Write([]byte(req.Command))
	}
	if err := b.enter(ctx, OpExec); err != nil {
		return sandbox.ExecResult{}, err
	}
	b.mu.Lock()
	b.execs = append(b.execs, req)
	b.mu.Unlock()
	if strings.HasPrefix(req.Command, "set -e\n") {
		return sandbox.ExecResult{}, nil
	}
	if req.Output == nil {
		_, _ = stdout.Write([]byte(req.Command))
	}
	return sandbox.NewExecResult(stdout, stderr, sandbox.ExecEvidence{ExitCode: 3}), nil
}

// ReadFile returns the file's bytes, or ErrFileNotExist.
func (b *Sandbox) ReadFile(ctx context.Context, path string) ([]byte, error) {
	if err := b.enter(ctx, OpReadFile); err != nil {
		return nil, err
	}
	return b.read(path, sandbox.MaxFileBytes)
}

// ReadFileStream returns the file as a stream with its size:
// ErrFileNotExist, or ErrFileTooLarge above maxBytes.
func (b *Sandbox) ReadFileStream(ctx context.Context, path string, maxBytes int64) (io.ReadCloser, int64, error) {
	if err := b.enter(ctx, OpReadFileStream); err != nil {
		return nil, 0, err
	}
	data, err := b.read(path, maxBytes)
	if err != nil {
		return nil, 0, err
	}
	return io.NopCloser(bytes.NewReader(data)), int64(len(data)), nil
}

func (b *Sandbox) read(path string, maxBytes int64) ([]byte, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	data, ok := b.files[path]
	switch {
	case !ok:
		return nil, sandbox.ErrFileNotExist
	case int64(len(data)) > maxBytes:
		return nil, sandbox.ErrFileTooLarge
	}
	return slices.Clone(data), nil
}

// WriteFile stores a copy of data at path.
func (b *Sandbox) WriteFile(ctx context.Context, path string, data []byte) error {
	if err := b.enter(ctx, OpWriteFile); err != nil {
		return err
	}
	b.Put(path, data)
	return nil
}

// WriteFileStream stores up to size bytes of src at path. A reaped sandbox
// is found out once the payload travelled, as a real one is.
func (b *Sandbox) WriteFileStream(ctx context.Context, path string, src io.Reader, size int64) error {
	if err := b.prov.enter(ctx, OpWriteFileStream, b.sid); err != nil {
		return err
	}
	data, err := io.ReadAll(io.LimitReader(src, size))
	if err != nil {
		return err
	}
	if b.gone.Load() {
		return sandbox.ErrNotFound
	}
	b.Put(path, data)
	return nil
}

// WriteFiles stores each member in turn.
func (b *Sandbox) WriteFiles(ctx context.Context, files []sandbox.FileWrite) error {
	if err := b.enter(ctx, OpWriteFiles); err != nil {
		return err
	}
	for _, f := range files {
		b.Put(f.Path, f.Data)
	}
	return nil
}

// Destroy is counted and hooked but removes nothing: the services remove a
// sandbox with Provider.Reap, which owns the revoke before it.
func (b *Sandbox) Destroy(ctx context.Context) error {
	return b.prov.enter(ctx, OpDestroy, b.sid)
}

// Put stores a copy of data at path directly, as if the sandbox's user
// had written it (no hook, no fault, no call counted).
func (b *Sandbox) Put(path string, data []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.files[path] = bytes.Clone(data)
	if b.files[path] == nil {
		b.files[path] = []byte{}
	}
}

// File returns a copy of the file at path, or nil.
func (b *Sandbox) File(path string) []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.files[path])
}

// Files returns a copy of every file by path.
func (b *Sandbox) Files() map[string][]byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make(map[string][]byte, len(b.files))
	for k, v := range b.files {
		out[k] = slices.Clone(v)
	}
	return out
}

// Execs returns the exec requests the sandbox ran, in order.
func (b *Sandbox) Execs() []sandbox.ExecRequest {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.execs)
}

// Running reports whether the sandbox is running (Attach finds it).
func (b *Sandbox) Running() bool { return b.isRunning() }

func (b *Sandbox) isRunning() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.running
}

func (b *Sandbox) setRunning(on bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.running = on
}
