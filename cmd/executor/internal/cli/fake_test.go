package cli

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/sandgate/sandgate/adapters/httpapi"
	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/core/session"
	"github.com/sandgate/sandgate/ports"
)

const testToken = "sgapi_test_token"

// fakeService is an in-memory ports.Service: it records what it was asked
// and answers err when set. Files live in a map keyed by "sid:path".
type fakeService struct {
	mu      sync.Mutex
	err     error
	calls   []string
	req     session.Request
	exec    sandbox.ExecRequest
	result  sandbox.ExecResult
	deleted []bool
	files   map[string][]byte
	infos   []ports.SessionInfo
	// overstate is added to the size ReadFile reports: a stream that
	// breaks before its Content-Length.
	overstate int64
}

var _ ports.Service = (*fakeService)(nil)

func newFake() *fakeService { return &fakeService{files: map[string][]byte{}} }

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

// state returns a copy of what the fake was asked, under its lock: the
// handler goroutine wrote it.
func (f *fakeService) state() fakeState {
	f.mu.Lock()
	defer f.mu.Unlock()
	return fakeState{req: f.req, exec: f.exec, deleted: append([]bool(nil), f.deleted...)}
}

type fakeState struct {
	req     session.Request
	exec    sandbox.ExecRequest
	deleted []bool
}

// put stores a file, under the lock.
func (f *fakeService) put(key string, b []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.files[key] = b
}

// file returns a stored file, under the lock.
func (f *fakeService) file(key string) []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.files[key]
}

func testInfo(sid domain.ID) ports.SessionInfo {
	n := domain.Networking{Type: domain.NetLimited, AllowedHosts: []string{"api.example.com"}}
	return ports.SessionInfo{ID: sid, SandboxID: "ctr1", Image: "img:1", Workdir: "/workspace", Networking: &n, Gated: true, State: ports.StateRunning}
}

func (f *fakeService) Provision(_ context.Context, sid domain.ID, req session.Request) (ports.SessionInfo, error) {
	if err := f.record("provision " + sid.String()); err != nil {
		return ports.SessionInfo{}, err
	}
	// The real service validates first; its errors name the field.
	if err := req.Validate(sid); err != nil {
		return ports.SessionInfo{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.req = req
	return testInfo(sid), nil
}

func (f *fakeService) Get(_ context.Context, sid domain.ID) (ports.SessionInfo, error) {
	if err := f.record("get " + sid.String()); err != nil {
		return ports.SessionInfo{}, err
	}
	return testInfo(sid), nil
}

func (f *fakeService) Delete(_ context.Context, sid domain.ID, checkpoint bool) error {
	if err := f.record("delete " + sid.String()); err != nil {
		return err
	}
	if checkpoint {
		return ports.ErrNotImplemented
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deleted = append(f.deleted, checkpoint)
	return nil
}

func (f *fakeService) List(context.Context) ([]ports.SessionInfo, error) {
	if err := f.record("list"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.infos, nil
}

func (f *fakeService) Exec(_ context.Context, sid domain.ID, req sandbox.ExecRequest) (sandbox.ExecResult, error) {
	if err := f.record("exec " + sid.String()); err != nil {
		return sandbox.ExecResult{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.exec = req
	return f.result, nil
}

func (f *fakeService) ReadFile(_ context.Context, sid domain.ID, p string, _ int64) (io.ReadCloser, int64, error) {
	if err := f.record("read " + sid.String() + ":" + p); err != nil {
		return nil, 0, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	b, ok := f.files[sid.String()+":"+p]
	if !ok {
		return nil, 0, sandbox.ErrFileNotExist
	}
	return io.NopCloser(bytes.NewReader(b)), int64(len(b)) + f.overstate, nil
}

func (f *fakeService) WriteFile(_ context.Context, sid domain.ID, p string, src io.Reader, size int64) error {
	if err := f.record("write " + sid.String() + ":" + p); err != nil {
		return err
	}
	b, err := io.ReadAll(src)
	if err != nil {
		return err
	}
	if int64(len(b)) != size {
		return errors.New("short write")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.files[sid.String()+":"+p] = b
	return nil
}

func (f *fakeService) WriteFiles(context.Context, domain.ID, []sandbox.FileWrite) error {
	return f.record("writefiles")
}

func (f *fakeService) Export(_ context.Context, sid domain.ID, root string) (io.ReadCloser, error) {
	if err := f.record("export " + sid.String() + ":" + root); err != nil {
		return nil, err
	}
	return io.NopCloser(strings.NewReader("TAR of " + root)), nil
}

// result is what one Run did.
type result struct {
	code           int
	stdout, stderr string
}

// harness runs the CLI against an httptest server over a fakeService.
type harness struct {
	t        *testing.T
	svc      *fakeService
	url      string
	env      map[string]string
	stdin    io.Reader
	terminal bool
	hc       *http.Client
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	svc := newFake()
	srv := httptest.NewServer(httpapi.NewAPIHandler(svc, httpapi.APIOptions{Token: testToken}))
	t.Cleanup(srv.Close)
	return &harness{t: t, svc: svc, url: srv.URL, env: map[string]string{EnvURL: srv.URL, EnvToken: testToken}}
}

func (h *harness) run(args ...string) result {
	h.t.Helper()
	var out, errOut bytes.Buffer
	s := Streams{
		Stdin: h.stdin, Stdout: &out, Stderr: &errOut,
		Getenv:           func(k string) string { return h.env[k] },
		StderrIsTerminal: h.terminal,
		HTTPClient:       h.hc,
	}
	code := Run(context.Background(), args, s)
	return result{code, out.String(), errOut.String()}
}
