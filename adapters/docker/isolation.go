package docker

import (
	"context"
	"fmt"

	"github.com/sandgate/sandgate/core/sandbox"
)

// checkIsolation refuses, before anything is created, a gVisor spec this
// provider cannot honour: no runtime configured, or one the daemon does
// not list (asked each time: an operator may register runsc with a
// SIGHUP while the executor runs). A runc spec needs nothing.
func (p *Provider) checkIsolation(ctx context.Context, spec sandbox.Spec) error {
	if spec.Isolation != sandbox.IsolationGVisor {
		return nil
	}
	// A gated sandbox joins its gate's network namespace; under runsc its
	// packets are the Sentry's, not its processes': until the bypass suite
	// shows the owner-match firewall holding for them, a gated gVisor
	// sandbox is refused rather than offered weaker (docs/DIVERGENCES.md).
	if spec.Gate != nil {
		return fmt.Errorf("provision %s: %w: a gated gVisor sandbox is not offered on Docker (the gate's firewall is not proven under runsc: docs/DIVERGENCES.md)", spec.SessionID, sandbox.ErrIsolationUnavailable)
	}
	rt := p.opts.GVisorRuntime
	if rt == "" {
		return fmt.Errorf("provision %s: %w: this executor offers no gVisor runtime (SANDGATE_GVISOR_RUNTIME is empty)", spec.SessionID, sandbox.ErrIsolationUnavailable)
	}
	info, err := p.eng.Info(ctx)
	if err != nil {
		return fmt.Errorf("provision %s: %w", spec.SessionID, translate(err, "info"))
	}
	if _, ok := info.Runtimes[rt]; !ok {
		return fmt.Errorf("provision %s: %w: the Docker engine has no runtime %q (register runsc in daemon.json \"runtimes\": docs/OPERATIONS.md)", spec.SessionID, sandbox.ErrIsolationUnavailable, rt)
	}
	return nil
}
