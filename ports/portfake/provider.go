package portfake

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

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/ports"
)

// ErrNoIssuer is what a gated Provision answers on a Provider without
// Tokens, as the real providers refuse one before creating anything.
var ErrNoIssuer = errors.New("portfake: a gated spec needs a GateTokenIssuer")

// Provider is a stateful ports.Provider: one Sandbox per session, running
// or stopped. A gated provision mints the gate token through Tokens
// (Generate, then Persist), and Reap revokes through Tokens before it
// removes anything, like the real providers (ports.Provider.Reap). Every
// method counts its calls and runs its hook and injected fault first (Fail,
// FailNext, Hook). The zero value is not usable: call NewProvider.
type Provider struct {
	// Tokens is the provider's GateTokenIssuer (nil: none). Set it before
	// the first call.
	Tokens ports.GateTokenIssuer

	*faults
	mu        sync.Mutex
	boxes     map[domain.ID]*Sandbox
	specs     []sandbox.Spec
	reaped    []domain.ID
	tokens    map[domain.ID]string
	inFlight  map[domain.ID]int
	maxFlight int
}

var _ ports.Provider = (*Provider)(nil)

// NewProvider returns a Provider that owns nothing.
func NewProvider() *Provider {
	return &Provider{
		faults: newFaults(), boxes: map[domain.ID]*Sandbox{},
		tokens: map[domain.ID]string{}, inFlight: map[domain.ID]int{},
	}
}

// Fail makes every later call of op answer err, until Fail(op, nil).
func (p *Provider) Fail(op Op, err error) { p.set(op, -1, err) }

// FailNext makes the next n calls of op answer err.
func (p *Provider) FailNext(op Op, n int, err error) { p.set(op, n, err) }

// Hook runs h on entry of every later call of op (nil: no hook); an error
// from h is the call's answer. Provider.Hook(op, gate.Hook) holds the calls.
func (p *Provider) Hook(op Op, h Hook) { p.hook(op, h) }

// Calls returns how many times op was called, failed calls included.
func (p *Provider) Calls(op Op) int { return p.count(op) }

// Provision records spec, runs the hook and fault (holding the session in
// flight meanwhile), mints a gated session's token, then creates the
// session's sandbox if it has none and starts it.
func (p *Provider) Provision(ctx context.Context, spec sandbox.Spec) (ports.Sandbox, error) {
	sid := spec.SessionID
	p.mu.Lock()
	p.specs = append(p.specs, spec)
	p.inFlight[sid]++
	p.maxFlight = max(p.maxFlight, p.inFlight[sid])
	p.mu.Unlock()
	err := p.enter(ctx, OpProvision, sid)
	p.mu.Lock()
	p.inFlight[sid]--
	p.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if err := p.mint(ctx, spec); err != nil {
		return nil, err
	}
	return p.put(sid, true), nil
}

// put sets the session's sandbox running or stopped, creating it if it has
// none.
func (p *Provider) put(sid domain.ID, running bool) *Sandbox {
	p.mu.Lock()
	defer p.mu.Unlock()
	b := p.boxes[sid]
	if b == nil {
		b = newSandbox(p, sid)
		p.boxes[sid] = b
	}
	b.setRunning(running)
	return b
}

// mint generates and persists a gated session's token, as the real
// providers do before and after creating its gate.
func (p *Provider) mint(ctx context.Context, spec sandbox.Spec) error {
	if spec.Gate == nil {
		return nil
	}
	if p.Tokens == nil {
		return ErrNoIssuer
	}
	tok := p.Tokens.Generate()
	if err := p.Tokens.Persist(ctx, spec.SessionID, tok); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tokens[spec.SessionID] = tok
	return nil
}

// Attach returns the session's running sandbox, or sandbox.ErrNotFound.
func (p *Provider) Attach(ctx context.Context, sid domain.ID) (ports.Sandbox, error) {
	if err := p.enter(ctx, OpAttach, sid); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	b := p.boxes[sid]
	if b == nil || !b.isRunning() {
		return nil, sandbox.ErrNotFound
	}
	return b, nil
}

// Owned lists every session with a sandbox, running or stopped, sorted.
func (p *Provider) Owned(ctx context.Context) ([]domain.ID, error) {
	if err := p.enter(ctx, OpOwned, domain.ID{}); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.SortedFunc(maps.Keys(p.boxes), domain.ID.Compare), nil
}

// Reap revokes through Tokens (its error aborts with nothing removed), then
// removes the session's sandbox: every handle on it answers
// sandbox.ErrNotFound from then on. Reaping nothing is a no-op.
func (p *Provider) Reap(ctx context.Context, sid domain.ID) error {
	if err := p.enter(ctx, OpReap, sid); err != nil {
		return err
	}
	if p.Tokens != nil {
		if err := p.Tokens.Revoke(ctx, sid); err != nil {
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
	delete(p.tokens, sid)
	return nil
}

// Export returns a real tar of the sandbox's files under root, members
// under path.Base(root), directories implied by the paths not included
// (files ending in .sh are 0755, the rest 0644); like Docker's, it reads a
// stopped sandbox too.
func (p *Provider) Export(ctx context.Context, sid domain.ID, root string) (io.ReadCloser, error) {
	if err := p.enter(ctx, OpExport, sid); err != nil {
		return nil, err
	}
	b := p.Box(sid)
	if b == nil {
		return nil, sandbox.ErrNotFound
	}
	files := b.Files()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	base := path.Base(root)
	_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: base + "/", Mode: 0o755})
	for _, name := range slices.Sorted(maps.Keys(files)) {
		rel, ok := strings.CutPrefix(name, root+"/")
		if !ok {
			continue
		}
		mode := int64(0o644)
		if strings.HasSuffix(name, ".sh") {
			mode = 0o755
		}
		_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: base + "/" + rel, Mode: mode, Size: int64(len(files[name]))})
		_, _ = tw.Write(files[name])
	}
	_ = tw.Close()
	return io.NopCloser(&buf), nil
}

// Box returns the session's sandbox, running or stopped, or nil.
func (p *Provider) Box(sid domain.ID) *Sandbox {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.boxes[sid]
}

// Stop stops the session's sandbox, keeping its files (docker stop); a
// session without one gets a stopped one, as a provision or reap left half
// done leaves labelled assets behind (an orphan, when no record names it).
func (p *Provider) Stop(sid domain.ID) *Sandbox { return p.put(sid, false) }

// Specs returns the specs Provision was called with, in order, failed
// calls included.
func (p *Provider) Specs() []sandbox.Spec {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.specs)
}

// Reaped returns the sessions Reap removed, in order (no-op reaps
// included, refused ones not).
func (p *Provider) Reaped() []domain.ID {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.reaped)
}

// Token returns the gate token minted for the session's live sandbox, or "".
func (p *Provider) Token(sid domain.ID) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.tokens[sid]
}

// MaxInFlight returns the most provisions of one session that were ever
// inside Provision at once.
func (p *Provider) MaxInFlight() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.maxFlight
}
