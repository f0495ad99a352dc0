package main

import (
	"context"
	"io"
	"sync"

	"go.uber.org/fx"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/ports"
)

// fakeProvider is a ports.Provider without Docker: it owns nothing, and
// Owned can be made to fail or to block until released (an in-flight
// request for the shutdown tests).
type fakeProvider struct {
	owned    []domain.ID // listed by Owned: orphans, since no record exists
	ownedErr error
	mu       sync.Mutex
	entered  chan struct{} // closed when Owned is first entered
	release  chan struct{} // Owned waits for it (or ctx) when non-nil
	// cancelled is closed when a blocked Owned saw its context end.
	cancelled chan struct{}
}

var _ ports.Provider = (*fakeProvider)(nil)

func (p *fakeProvider) module() fx.Option {
	return fx.Module("provider", fx.Provide(func() ports.Provider { return p }))
}

func (p *fakeProvider) Owned(ctx context.Context) ([]domain.ID, error) {
	if p.release != nil {
		p.mu.Lock()
		select {
		case <-p.entered:
		default:
			close(p.entered)
		}
		p.mu.Unlock()
		select {
		case <-p.release:
		case <-ctx.Done():
			if p.cancelled != nil {
				close(p.cancelled)
			}
			return nil, ctx.Err()
		}
	}
	return p.owned, p.ownedErr
}

func (p *fakeProvider) Provision(context.Context, sandbox.Spec) (ports.Sandbox, error) {
	return nil, sandbox.ErrNotFound
}

func (p *fakeProvider) Attach(context.Context, domain.ID) (ports.Sandbox, error) {
	return nil, sandbox.ErrNotFound
}

func (p *fakeProvider) Reap(context.Context, domain.ID) error { return nil }

func (p *fakeProvider) Export(context.Context, domain.ID, string) (io.ReadCloser, error) {
	return nil, sandbox.ErrNotFound
}
