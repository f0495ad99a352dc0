package porttest

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/gatewire"
	"github.com/sandgate/sandgate/ports"
)

// recordingTokens are gate tokens (ports.GateTokenIssuer) that count their
// mints and record their revokes, passing each call to inner when set (the
// gated rows wrap the control plane's tokens; the validation rows require
// them never to be called). check, when set, runs on each revoke (its first
// error is kept); fail, when set, is every revoke's answer.
type recordingTokens struct {
	inner ports.GateTokenIssuer
	check func(context.Context, domain.ID) error
	fail  error

	generated, persisted atomic.Int32

	mu       sync.Mutex
	ids      []domain.ID
	checkErr error
}

var _ ports.GateTokenIssuer = (*recordingTokens)(nil)

func (r *recordingTokens) Generate() string {
	r.generated.Add(1)
	if r.inner != nil {
		return r.inner.Generate()
	}
	return gatewire.TokenPrefix + "porttest"
}

func (r *recordingTokens) Persist(ctx context.Context, sid domain.ID, token string) error {
	r.persisted.Add(1)
	if r.inner != nil {
		return r.inner.Persist(ctx, sid, token)
	}
	return nil
}

func (r *recordingTokens) Revoke(c context.Context, id domain.ID) error {
	var err error
	if r.check != nil {
		err = r.check(c, id)
	}
	r.mu.Lock()
	r.ids = append(r.ids, id)
	if err != nil && r.checkErr == nil {
		r.checkErr = err
	}
	r.mu.Unlock()
	if r.fail != nil {
		return r.fail
	}
	if r.inner != nil {
		return r.inner.Revoke(c, id)
	}
	return nil
}

// calls returns the sessions revoked, in order.
func (r *recordingTokens) calls() []domain.ID {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]domain.ID(nil), r.ids...)
}

// checked returns check's first error.
func (r *recordingTokens) checked() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.checkErr
}
