package httpapi

import (
	"bytes"
	"context"
	"io"
	"sync"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/core/session"
	"github.com/sandgate/sandgate/ports"
)

// fakeService is a ports.Service that records what it was called with and
// answers err when set; files are kept in memory unless sink or source
// take over (the streaming tests).
type fakeService struct {
	mu    sync.Mutex
	calls []string
	err   error

	req      session.Request
	exec     sandbox.ExecRequest
	batch    []sandbox.FileWrite
	maxBytes int64
	deleted  []bool
	files    map[string][]byte

	// sink consumes a WriteFile's stream; source produces a ReadFile's;
	// export produces Export's.
	sink   func(src io.Reader, size int64) error
	source func() (io.ReadCloser, int64)
	export func() io.ReadCloser
	// execResult, when set, is what Exec answers.
	execResult *sandbox.ExecResult
}

var _ ports.Service = (*fakeService)(nil)

func newFakeService() *fakeService { return &fakeService{files: map[string][]byte{}} }

func (f *fakeService) record(call string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call)
	return f.err
}

func (f *fakeService) called() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func info(sid domain.ID) ports.SessionInfo {
	n := domain.Networking{Type: domain.NetLimited, AllowedHosts: []string{"example.com"}}
	return ports.SessionInfo{ID: sid, SandboxID: "ctr1", Image: "img", Workdir: "/w", Networking: &n, Gated: true, State: ports.StateRunning}
}

func (f *fakeService) Provision(_ context.Context, sid domain.ID, req session.Request) (ports.SessionInfo, error) {
	if err := f.record("provision " + sid.String()); err != nil {
		return ports.SessionInfo{}, err
	}
	f.req = req
	return info(sid), nil
}

func (f *fakeService) Get(_ context.Context, sid domain.ID) (ports.SessionInfo, error) {
	if err := f.record("get " + sid.String()); err != nil {
		return ports.SessionInfo{}, err
	}
	return info(sid), nil
}

func (f *fakeService) Delete(_ context.Context, sid domain.ID, checkpoint bool) error {
	if err := f.record("delete " + sid.String()); err != nil {
		return err
	}
	f.deleted = append(f.deleted, checkpoint)
	return nil
}

func (f *fakeService) List(context.Context) ([]ports.SessionInfo, error) {
	if err := f.record("list"); err != nil {
		return nil, err
	}
	return []ports.SessionInfo{info(domain.MustParseSessionID("ses_a")), {ID: domain.MustParseSessionID("ses_b"), State: ports.StateStopped}}, nil
}

func (f *fakeService) Exec(_ context.Context, sid domain.ID, req sandbox.ExecRequest) (sandbox.ExecResult, error) {
	if err := f.record("exec " + sid.String()); err != nil {
		return sandbox.ExecResult{}, err
	}
	f.exec = req
	if f.execResult != nil {
		return *f.execResult, nil
	}
	return sandbox.ExecResult{Stdout: "out:" + req.Command, Stderr: "err", ExitCode: 7, TimedOut: true, Truncated: true}, nil
}

func (f *fakeService) ReadFile(_ context.Context, sid domain.ID, path string, maxBytes int64) (io.ReadCloser, int64, error) {
	if err := f.record("read " + sid.String() + " " + path); err != nil {
		return nil, 0, err
	}
	f.maxBytes = maxBytes
	if f.source != nil {
		rc, n := f.source()
		return rc, n, nil
	}
	data, ok := f.files[path]
	if !ok {
		return nil, 0, sandbox.ErrFileNotExist
	}
	return io.NopCloser(bytes.NewReader(data)), int64(len(data)), nil
}

func (f *fakeService) WriteFile(_ context.Context, sid domain.ID, path string, src io.Reader, size int64) error {
	if err := f.record("write " + sid.String() + " " + path); err != nil {
		return err
	}
	if f.sink != nil {
		return f.sink(src, size)
	}
	data, err := io.ReadAll(src)
	if err != nil {
		return err
	}
	f.files[path] = data
	return nil
}

func (f *fakeService) WriteFiles(_ context.Context, sid domain.ID, files []sandbox.FileWrite) error {
	if err := f.record("batch " + sid.String()); err != nil {
		return err
	}
	f.batch = files
	return nil
}

func (f *fakeService) Export(_ context.Context, sid domain.ID, root string) (io.ReadCloser, error) {
	if err := f.record("export " + sid.String() + " " + root); err != nil {
		return nil, err
	}
	if f.export != nil {
		return f.export(), nil
	}
	return io.NopCloser(bytes.NewReader([]byte("tar:" + root))), nil
}
