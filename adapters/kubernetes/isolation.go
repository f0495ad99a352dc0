package kubernetes

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/core/sandbox"
)

// checkIsolation refuses, before a pod is created, a gVisor spec this
// provider cannot honour: no RuntimeClass configured, or one the cluster
// does not have (asked each time: an operator may add it while the
// executor runs). A pod naming a missing class would be refused by the
// API server anyway, with a message about admission rather than gVisor.
func (p *Provider) checkIsolation(ctx context.Context, spec sandbox.Spec) error {
	if spec.Isolation != sandbox.IsolationGVisor {
		return nil
	}
	// A pod is one gVisor sandbox whose netstack implements iptables: the
	// gate's firewall and netsetup's route flush would act on it, not on
	// the node's kernel. Neither is proven here (no cluster with a runsc
	// shim), so a sandbox whose containment depends on them is refused
	// rather than offered weaker (docs/DIVERGENCES.md).
	if spec.Networking.Limited() || spec.Gate != nil {
		return fmt.Errorf("provision %s: %w: a gVisor sandbox on Kubernetes is offered with unrestricted networking only (its gate and route flush are not proven under gVisor: docs/DIVERGENCES.md)", spec.SessionID, sandbox.ErrIsolationUnavailable)
	}
	rc := p.opts.GVisorRuntimeClass
	if rc == "" {
		return fmt.Errorf("provision %s: %w: this executor offers no gVisor RuntimeClass (SANDGATE_GVISOR_RUNTIME is empty)", spec.SessionID, sandbox.ErrIsolationUnavailable)
	}
	_, err := p.cli.NodeV1().RuntimeClasses().Get(ctx, rc, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("provision %s: %w: the cluster has no RuntimeClass %q (install gVisor's runsc shim on the nodes and create the class: docs/OPERATIONS.md)", spec.SessionID, sandbox.ErrIsolationUnavailable, rc)
	case err != nil:
		return translate(err, "get runtimeclass "+rc)
	}
	return nil
}
