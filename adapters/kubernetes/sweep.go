package kubernetes

import (
	"context"

	"github.com/sandgate/sandgate/core/sandbox"
)

// sweepOnce removes the stale temporaries an interrupted write left in an
// adopted pod (issue 11: a kill -9 of the executor mid-upload leaves its
// .sandgate-write-* file behind). A temporary is ours by its exact name and
// stale by its age (shell.Sweep, Options.StaleTempAge), so a
// concurrent write's live temporary is kept. It runs on the first adoption
// of each pod by this provider — after an executor restart, the first PUT;
// later adoptions, the hot path, cost nothing. Best effort: a failure is
// logged and retried on the next adoption, never failing the provision.
func (p *Provider) sweepOnce(ctx context.Context, h *handle) {
	if _, done := p.swept.LoadOrStore(h.uid, struct{}{}); done {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, sandbox.SweepTimeout)
	defer cancel()
	n, err := sandbox.Sweep(p.opts.StaleTempAge, func(argv []string, out *sandbox.Capture) (int, string, error) {
		return h.run(ctx, argv, nil, out)
	})
	if err != nil {
		p.swept.Delete(h.uid)
		p.opts.Logger.Warn("sweeping stale write temporaries failed", "pod", h.name, "err", err)
		return
	}
	if n > 0 {
		p.opts.Logger.Info("removed stale write temporaries", "pod", h.name, "count", n)
	}
}
