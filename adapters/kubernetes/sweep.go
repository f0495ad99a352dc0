package kubernetes

import (
	"context"
	"strings"
	"time"

	"github.com/sandgate/sandgate/core/sandbox"
)

// sweepTimeout bounds one sweep: it walks the sandbox's filesystem, and an
// adoption must not wait on a huge tree for long.
const sweepTimeout = 20 * time.Second

// sweepOnce removes the stale temporaries an interrupted write left in an
// adopted pod (issue 11: a kill -9 of the executor mid-upload leaves its
// .sandgate-write-* file behind). A temporary is ours by its exact name and
// stale by its age (sandbox.SweepScript, Options.StaleTempAge), so a
// concurrent write's live temporary is kept. It runs on the first adoption
// of each pod by this provider — after an executor restart, the first PUT;
// later adoptions, the hot path, cost nothing. Best effort: a failure is
// logged and retried on the next adoption, never failing the provision.
func (p *Provider) sweepOnce(ctx context.Context, h *handle) {
	if _, done := p.swept.LoadOrStore(h.uid, struct{}{}); done {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, sweepTimeout)
	defer cancel()
	out := sandbox.NewCapture(64 << 10)
	code, stderr, err := h.run(ctx, sandbox.SweepArgs(p.opts.StaleTempAge, "/"), nil, out)
	if err == nil && code != 0 {
		err = sandbox.ClassifyScript(code, stderr, nil)
	}
	if err != nil {
		p.swept.Delete(h.uid)
		p.opts.Logger.Warn("sweeping stale write temporaries failed", "pod", h.name, "err", err)
		return
	}
	if n := strings.Count(out.String(), "\n"); n > 0 {
		p.opts.Logger.Info("removed stale write temporaries", "pod", h.name, "count", n)
	}
}
