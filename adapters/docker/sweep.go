package docker

import (
	"context"

	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/ports"
)

// sweepOnce removes the stale temporaries an interrupted write left in an
// adopted sandbox (issue 11: a kill -9 of the executor mid-upload left a
// 20 MiB .sandgate-write-* file behind). A temporary is ours by its exact
// name and stale by its age (shell.Sweep, Options.StaleTempAge), so
// a concurrent write's live temporary is kept. It runs on the first
// adoption of each container by this provider — after an executor restart,
// the first PUT — and again when an adoption restarts a stopped one; later
// adoptions, the hot path, cost nothing. Best effort: a failure is logged
// and retried on the next adoption, never failing the provision. sb is nil
// after a failed adoption.
func (p *Provider) sweepOnce(ctx context.Context, sb ports.Sandbox) {
	h, ok := sb.(*handle)
	if !ok || h == nil {
		return
	}
	if _, done := p.swept.LoadOrStore(h.id, struct{}{}); done {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, sandbox.SweepTimeout)
	defer cancel()
	n, err := sandbox.Sweep(p.opts.StaleTempAge, func(argv []string, out *sandbox.Capture) (int, string, error) {
		return h.runScript(ctx, argv, nil, out)
	})
	if err != nil {
		p.swept.Delete(h.id)
		p.opts.Logger.Warn("sweeping stale write temporaries failed", "session", h.sid, "err", err)
		return
	}
	if n > 0 {
		p.opts.Logger.Info("removed stale write temporaries", "session", h.sid, "count", n)
	}
}
