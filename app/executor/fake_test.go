package executor

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/ports"
)

// fakeProvider is a stateful ports.Provider: one fakeSandbox per session,
// running or stopped, with the specs it was asked for and injectable errors.
// Like the real providers, its Reap revokes through its tokens (when set)
// before it removes anything (ports.Provider.Reap).
type fakeProvider struct {
	tokens    ports.GateTokenIssuer
	mu        sync.Mutex
	boxes     map[domain.ID]*fakeSandbox
	specs     []sandbox.Spec
	reaped    []domain.ID
	attaches  int
	inFlight  map[domain.ID]int
	maxFlight int
	// provisionErr fails the next provisions; gate, when set, holds every
	// provision until it is closed.
	provisionErr error
	gate         chan struct{}
	entered      chan domain.ID
	// failWrites fails every WriteFiles of every sandbox while set.
	failWrites atomic.Bool
	// exportErr, when set, is what every Export answers.
	exportErr atomic.Pointer[error]
}

var _ ports.Provider = (*fakeProvider)(nil)

func newFakeProvider() *fakeProvider {
	return &fakeProvider{boxes: map[domain.ID]*fakeSandbox{}, inFlight: map[domain.ID]int{}}
}

func (p *fakeProvider) Provision(_ context.Context, spec sandbox.Spec) (ports.Sandbox, error) {
	p.mu.Lock()
	p.specs = append(p.specs, spec)
	p.inFlight[spec.SessionID]++
	p.maxFlight = max(p.maxFlight, p.inFlight[spec.SessionID])
	gate, entered := p.gate, p.entered
	p.mu.Unlock()
	if entered != nil {
		entered <- spec.SessionID
	}
	if gate != nil {
		<-gate
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.inFlight[spec.SessionID]--
	if p.provisionErr != nil {
		return nil, p.provisionErr
	}
	b := p.boxes[spec.SessionID]
	if b == nil {
		b = &fakeSandbox{id: "ctr-" + spec.SessionID.String(), files: map[string][]byte{}, failWrites: &p.failWrites}
		p.boxes[spec.SessionID] = b
	}
	b.running = true
	return b, nil
}

func (p *fakeProvider) Attach(_ context.Context, sid domain.ID) (ports.Sandbox, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.attaches++
	b := p.boxes[sid]
	if b == nil || !b.running {
		return nil, sandbox.ErrNotFound
	}
	return b, nil
}

func (p *fakeProvider) Owned(context.Context) ([]domain.ID, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var ids []domain.ID
	for id := range p.boxes {
		ids = append(ids, id)
	}
	return ids, nil
}

func (p *fakeProvider) Reap(ctx context.Context, sid domain.ID) error {
	if p.tokens != nil {
		if err := p.tokens.Revoke(ctx, sid); err != nil {
			return err
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reaped = append(p.reaped, sid)
	if b := p.boxes[sid]; b != nil {
		b.gone.Store(true)
	}
	delete(p.boxes, sid)
	return nil
}

// Export returns a real tar of the sandbox's files under root, members
// under path.Base(root), directories implied by the paths included; like
// Docker's, it reads a stopped sandbox too.
func (p *fakeProvider) Export(_ context.Context, sid domain.ID, root string) (io.ReadCloser, error) {
	if err := p.exportErr.Load(); err != nil {
		return nil, *err
	}
	p.mu.Lock()
	b := p.boxes[sid]
	p.mu.Unlock()
	if b == nil {
		return nil, sandbox.ErrNotFound
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	base := path.Base(root)
	_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: base + "/", Mode: 0o755})
	for _, name := range slices.Sorted(maps.Keys(b.files)) {
		rel, ok := strings.CutPrefix(name, root+"/")
		if !ok {
			continue
		}
		mode := int64(0o644)
		if strings.HasSuffix(name, ".sh") {
			mode = 0o755
		}
		_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: base + "/" + rel, Mode: mode, Size: int64(len(b.files[name]))})
		_, _ = tw.Write(b.files[name])
	}
	_ = tw.Close()
	return io.NopCloser(&buf), nil
}

// countingStore is a store that counts the revokes of each session, so a
// test can hand it to both the Service and the provider's tokens and count
// every revoke, whoever makes it.
type countingStore struct {
	ports.SessionStore
	mu      sync.Mutex
	revokes map[domain.ID]int
}

func (c *countingStore) Revoke(ctx context.Context, sid domain.ID) error {
	c.mu.Lock()
	if c.revokes == nil {
		c.revokes = map[domain.ID]int{}
	}
	c.revokes[sid]++
	c.mu.Unlock()
	return c.SessionStore.Revoke(ctx, sid)
}

// revoked returns how many times sid's token was revoked.
func (c *countingStore) revoked(sid domain.ID) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.revokes[sid]
}

// fakeSandbox keeps files in memory and echoes commands.
type fakeSandbox struct {
	id      string
	running bool
	gone    atomic.Bool // reaped: every call answers ErrNotFound
	// failWrites is the provider's fault switch (nil: never).
	failWrites *atomic.Bool
	mu         sync.Mutex
	files      map[string][]byte
	execs      []sandbox.ExecRequest
}

func (b *fakeSandbox) ID() string { return b.id }

// Exec echoes the command with exit code 3, but for a restore script
// ("set -e" first), which succeeds.
func (b *fakeSandbox) Exec(_ context.Context, req sandbox.ExecRequest) (sandbox.ExecResult, error) {
	if b.gone.Load() {
		return sandbox.ExecResult{}, sandbox.ErrNotFound
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.execs = append(b.execs, req)
	if strings.HasPrefix(req.Command, "set -e\n") {
		return sandbox.ExecResult{}, nil
	}
	return sandbox.ExecResult{Stdout: req.Command, ExitCode: 3}, nil
}

func (b *fakeSandbox) ReadFile(ctx context.Context, path string) ([]byte, error) {
	rc, _, err := b.ReadFileStream(ctx, path, sandbox.MaxFileBytes)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rc.Close() }()
	return io.ReadAll(rc)
}

func (b *fakeSandbox) ReadFileStream(_ context.Context, path string, maxBytes int64) (io.ReadCloser, int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	data, ok := b.files[path]
	switch {
	case !ok:
		return nil, 0, sandbox.ErrFileNotExist
	case int64(len(data)) > maxBytes:
		return nil, 0, sandbox.ErrFileTooLarge
	}
	return io.NopCloser(bytes.NewReader(data)), int64(len(data)), nil
}

func (b *fakeSandbox) WriteFile(ctx context.Context, path string, data []byte) error {
	return b.WriteFileStream(ctx, path, bytes.NewReader(data), int64(len(data)))
}

func (b *fakeSandbox) WriteFileStream(_ context.Context, path string, src io.Reader, size int64) error {
	data, err := io.ReadAll(io.LimitReader(src, size))
	if err != nil {
		return err
	}
	if b.gone.Load() { // found out once the payload travelled
		return sandbox.ErrNotFound
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.files[path] = data
	return nil
}

func (b *fakeSandbox) WriteFiles(ctx context.Context, files []sandbox.FileWrite) error {
	if b.failWrites != nil && b.failWrites.Load() {
		return errors.New("fake: write failed")
	}
	for _, f := range files {
		if err := b.WriteFile(ctx, f.Path, slices.Clone(f.Data)); err != nil {
			return err
		}
	}
	return nil
}

func (b *fakeSandbox) Destroy(context.Context) error { return nil }
