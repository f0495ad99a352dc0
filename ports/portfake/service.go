package portfake

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"slices"
	"sync"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/core/session"
	"github.com/sandgate/sandgate/ports"
)

// ErrShortWrite is what Service.WriteFile answers when src does not hold
// exactly size bytes.
var ErrShortWrite = errors.New("portfake: the stream does not hold the size announced")

// Service is a recording ports.Service for the tests of what drives one
// (the HTTP API, its client, the CLI). Each call is recorded as a line
// ("provision ses_a", "read ses_a /w/f", …), then answers Err when set.
// Files live in memory keyed by session and path, unless Sink, Source or
// ExportSource take over a stream. Set the exported fields before the
// calls they shape; read what was recorded through the methods, which take
// the lock the handlers' goroutines write under.
type Service struct {
	// Err, when set, is what every call answers (after recording it).
	Err error
	// Infos is what List answers.
	Infos []ports.SessionInfo
	// ExecResult is what Exec answers.
	ExecResult sandbox.ExecResult
	// ExecRun, when set, answers Exec instead (after recording it): a
	// command that streams output, blocks or fails as a test needs.
	ExecRun func(ctx context.Context, req sandbox.ExecRequest) (sandbox.ExecResult, error)
	// NoCheckpoints makes a checkpointing Delete answer
	// ports.ErrNotImplemented, as a service without a checkpoint store does.
	NoCheckpoints bool
	// Overstate is added to the size ReadFile reports: a stream that breaks
	// before its announced length.
	Overstate int64
	// Sink consumes a WriteFile's stream instead of storing it; Source
	// produces a ReadFile's stream and size; ExportSource produces Export's.
	Sink         func(src io.Reader, size int64) error
	Source       func() (io.ReadCloser, int64)
	ExportSource func() io.ReadCloser
	// Listing is what ListDir answers (nil: sandbox.ErrFileNotExist).
	Listing []sandbox.FileInfo
	// Dial answers DialPort (nil: sandbox.ErrPortClosed).
	Dial func(port int) (net.Conn, error)

	mu       sync.Mutex
	procs    map[domain.ID]*ProcTable
	calls    []string
	req      session.Request
	exec     sandbox.ExecRequest
	batch    []sandbox.FileWrite
	maxBytes int64
	deleted  []bool
	files    map[fileKey][]byte
}

type fileKey struct {
	sid  domain.ID
	path string
}

var _ ports.Service = (*Service)(nil)

// NewService returns a Service with no file and no session.
func NewService() *Service { return &Service{files: map[fileKey][]byte{}} }

// Info is the running, gated session Provision and Get answer for sid.
func Info(sid domain.ID) ports.SessionInfo {
	n := domain.Networking{Type: domain.NetLimited, AllowedHosts: []string{"api.example.com"}}
	return ports.SessionInfo{
		ID: sid, SandboxID: "ctr1", Image: "img:1", Workdir: "/workspace", Networking: &n, Gated: true,
		State: ports.StateRunning,
	}
}

func (f *Service) record(call string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call)
	return f.Err
}

// Provision validates req as the real service does (its errors name the
// field), records it and answers Info(sid).
func (f *Service) Provision(_ context.Context, sid domain.ID, req session.Request) (ports.SessionInfo, error) {
	if err := f.record("provision " + sid.String()); err != nil {
		return ports.SessionInfo{}, err
	}
	if err := req.Validate(sid); err != nil {
		return ports.SessionInfo{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.req = req
	return Info(sid), nil
}

// Get answers Info(sid).
func (f *Service) Get(_ context.Context, sid domain.ID) (ports.SessionInfo, error) {
	if err := f.record("get " + sid.String()); err != nil {
		return ports.SessionInfo{}, err
	}
	return Info(sid), nil
}

// Delete records the checkpoint flag of a delete it accepts.
func (f *Service) Delete(_ context.Context, sid domain.ID, checkpoint bool) error {
	if err := f.record("delete " + sid.String()); err != nil {
		return err
	}
	if checkpoint && f.NoCheckpoints {
		return ports.ErrNotImplemented
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deleted = append(f.deleted, checkpoint)
	return nil
}

// List answers Infos.
func (f *Service) List(context.Context) ([]ports.SessionInfo, error) {
	if err := f.record("list"); err != nil {
		return nil, err
	}
	return f.Infos, nil
}

// Exec records req and answers ExecResult (its output streamed first when
// req.Output is set), or what ExecRun answers.
func (f *Service) Exec(ctx context.Context, sid domain.ID, req sandbox.ExecRequest) (sandbox.ExecResult, error) {
	if err := f.record("exec " + sid.String()); err != nil {
		return sandbox.ExecResult{}, err
	}
	f.mu.Lock()
	f.exec = req
	f.exec.Output = nil // the caller's sink, alive only during the call
	run, res := f.ExecRun, f.ExecResult
	f.mu.Unlock()
	if run != nil {
		return run(ctx, req)
	}
	if req.Output != nil { // streamed: the result's output, as pieces
		stdout, stderr := sandbox.NewExecCaptures(req)
		_, _ = stdout.Write([]byte(res.Stdout))
		_, _ = stderr.Write([]byte(res.Stderr))
	}
	return res, nil
}

// ReadFile records maxBytes and streams Source, else the stored file (its
// size plus Overstate), else answers sandbox.ErrFileNotExist.
func (f *Service) ReadFile(_ context.Context, sid domain.ID, path string, maxBytes int64) (io.ReadCloser, int64, error) {
	if err := f.record("read " + sid.String() + " " + path); err != nil {
		return nil, 0, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.maxBytes = maxBytes
	if f.Source != nil {
		rc, n := f.Source()
		return rc, n, nil
	}
	data, ok := f.files[fileKey{sid, path}]
	if !ok {
		return nil, 0, sandbox.ErrFileNotExist
	}
	return io.NopCloser(bytes.NewReader(data)), int64(len(data)) + f.Overstate, nil
}

// WriteFile hands src to Sink, else stores it: exactly size bytes, or
// ErrShortWrite with nothing stored.
func (f *Service) WriteFile(_ context.Context, sid domain.ID, path string, src io.Reader, size int64) error {
	if err := f.record("write " + sid.String() + " " + path); err != nil {
		return err
	}
	if f.Sink != nil {
		return f.Sink(src, size)
	}
	data, err := io.ReadAll(src)
	if err != nil {
		return err
	}
	if int64(len(data)) != size {
		return ErrShortWrite
	}
	f.Put(sid, path, data)
	return nil
}

// WriteFiles records the batch.
func (f *Service) WriteFiles(_ context.Context, sid domain.ID, files []sandbox.FileWrite) error {
	if err := f.record("batch " + sid.String()); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.batch = files
	return nil
}

// Export streams ExportSource, else "tar:" and root.
func (f *Service) Export(_ context.Context, sid domain.ID, root string) (io.ReadCloser, error) {
	if err := f.record("export " + sid.String() + " " + root); err != nil {
		return nil, err
	}
	if f.ExportSource != nil {
		return f.ExportSource(), nil
	}
	return io.NopCloser(bytes.NewReader([]byte("tar:" + root))), nil
}

// Put stores a session's file (nil is stored as empty).
func (f *Service) Put(sid domain.ID, path string, data []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.files[fileKey{sid, path}] = append([]byte{}, data...)
}

// File returns a copy of a session's stored file, or nil.
func (f *Service) File(sid domain.ID, path string) []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.files[fileKey{sid, path}])
}

// Calls returns the calls made so far, in order.
func (f *Service) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// Request returns the last request Provision accepted.
func (f *Service) Request() session.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.req
}

// ExecRequest returns the last request Exec was called with, without its
// Output sink.
func (f *Service) ExecRequest() sandbox.ExecRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.exec
}

// Batch returns the last batch WriteFiles was called with.
func (f *Service) Batch() []sandbox.FileWrite {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.batch
}

// MaxBytes returns the bound of the last ReadFile.
func (f *Service) MaxBytes() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.maxBytes
}

// Deleted returns the checkpoint flag of each accepted Delete, in order.
func (f *Service) Deleted() []bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.deleted)
}

// Procs records the call and answers the session's in-memory procs
// (SessionProcs), or, when Err is set, a ProcHost whose every call answers
// Err.
func (f *Service) Procs(sid domain.ID) ports.ProcHost {
	if err := f.record("procs " + sid.String()); err != nil {
		return failingProcs{err}
	}
	return f.SessionProcs(sid)
}

// SessionProcs is the session's procs, made on first use.
func (f *Service) SessionProcs(sid domain.ID) *ProcTable {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.procs == nil {
		f.procs = map[domain.ID]*ProcTable{}
	}
	if f.procs[sid] == nil {
		f.procs[sid] = &ProcTable{}
	}
	return f.procs[sid]
}

// failingProcs answers err to every call.
type failingProcs struct{ err error }

func (f failingProcs) StartProc(context.Context, sandbox.ProcStart) (sandbox.ProcInfo, error) {
	return sandbox.ProcInfo{}, f.err
}
func (f failingProcs) Procs(context.Context) ([]sandbox.ProcInfo, error) { return nil, f.err }
func (f failingProcs) Proc(context.Context, string) (sandbox.ProcInfo, error) {
	return sandbox.ProcInfo{}, f.err
}
func (f failingProcs) ProcOutput(context.Context, string, sandbox.ProcOutputQuery, func(sandbox.ProcChunk) error) (sandbox.ProcInfo, error) {
	return sandbox.ProcInfo{}, f.err
}
func (f failingProcs) ProcStdin(context.Context, string, io.Reader, bool) error { return f.err }
func (f failingProcs) SignalProc(context.Context, string, string) error         { return f.err }
func (f failingProcs) ResizeProc(context.Context, string, int, int) error       { return f.err }
func (f failingProcs) WaitProc(context.Context, string) (sandbox.ProcInfo, error) {
	return sandbox.ProcInfo{}, f.err
}
func (f failingProcs) RemoveProc(context.Context, string) error { return f.err }
