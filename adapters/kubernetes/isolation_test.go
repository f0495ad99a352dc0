package kubernetes

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
)

// A gVisor spec is refused before a pod is created without a RuntimeClass
// configured or in the cluster; with one, the pod names it and is marked,
// and adoption finds it again only for a gVisor spec.
func TestProvisionGVisor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sid := domain.NewID("ses")
	gv := sandbox.Spec{SessionID: sid, Image: "x", Isolation: sandbox.IsolationGVisor}

	p, cli := fakeCluster(t, false)
	limited := gv
	limited.Networking = domain.Networking{Type: domain.NetLimited}
	_, err := p.Provision(ctx, limited)
	require.ErrorIs(t, err, sandbox.ErrIsolationUnavailable)
	require.ErrorContains(t, err, "unrestricted networking only")

	_, err = p.Provision(ctx, gv)
	require.ErrorIs(t, err, sandbox.ErrIsolationUnavailable)
	require.ErrorContains(t, err, "SANDGATE_GVISOR_RUNTIME is empty")

	p.opts.GVisorRuntimeClass = "gvisor"
	_, err = p.Provision(ctx, gv)
	require.ErrorIs(t, err, sandbox.ErrIsolationUnavailable)
	require.ErrorContains(t, err, `no RuntimeClass "gvisor"`)
	pods, err := cli.CoreV1().Pods(p.opts.Namespace).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Empty(t, pods.Items, "nothing is created for a refused spec")

	_, err = cli.NodeV1().RuntimeClasses().Create(ctx, &nodev1.RuntimeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "gvisor"}, Handler: "runsc"}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = p.Provision(ctx, gv)
	require.NoError(t, err)
	pod, err := cli.CoreV1().Pods(p.opts.Namespace).Get(ctx, PodName(sid.String()), metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, "gvisor", *pod.Spec.RuntimeClassName)
	require.Equal(t, "gvisor", pod.Labels[labelIsolation])

	_, err = p.Provision(ctx, sandbox.Spec{SessionID: sid, Image: "x"})
	require.ErrorIs(t, err, sandbox.ErrSpecMismatch)
	require.ErrorContains(t, err, `isolation is "gvisor", requested "runc"`)
}
