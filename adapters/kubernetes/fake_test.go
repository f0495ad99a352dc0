package kubernetes

import (
	"context"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/core/sandbox/shell"
)

// noExec is the execer of unit tests, which never reach a pod: any exec but
// an adoption's sweep (which finds nothing) is a test failure.
type noExec struct{ t *testing.T }

func (n noExec) exec(_ context.Context, _, _ string, argv []string, _ io.Reader, _, _ io.Writer) (int, error) {
	if !slices.Contains(argv, shell.Sweep) {
		n.t.Error("unexpected exec")
	}
	return 0, nil
}

// fakeCluster is a fake clientset whose created pods become ready at once
// unless neverReady is set — the one state a real cluster cannot be held in
// on demand.
func fakeCluster(t *testing.T, neverReady bool, objs ...runtime.Object) (*Provider, *fake.Clientset) {
	t.Helper()
	cli := fake.NewClientset(objs...)
	uids := 0
	cli.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		pod := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		uids++
		pod.UID = types.UID("uid-" + string(rune('a'+uids)))
		if !neverReady {
			markReady(pod)
		}
		return false, nil, nil
	})
	cli.PrependReactor("delete", "pods", preconditionReactor(cli))
	p, err := newProvider(cli, noExec{t}, Options{ReadyTimeout: 300 * time.Millisecond, RemoveTimeout: 2 * time.Second,
		NetsetupImage: "busybox:1.35"})
	require.NoError(t, err)
	return p, cli
}

// preconditionReactor makes the fake honour a delete's UID precondition, as
// the API server does (409 Conflict).
func preconditionReactor(cli *fake.Clientset) k8stesting.ReactionFunc {
	return func(a k8stesting.Action) (bool, runtime.Object, error) {
		d := a.(k8stesting.DeleteAction)
		pre := d.GetDeleteOptions().Preconditions
		if pre == nil || pre.UID == nil {
			return false, nil, nil
		}
		obj, err := cli.Tracker().Get(corev1.SchemeGroupVersion.WithResource("pods"), d.GetNamespace(), d.GetName())
		if err != nil {
			return false, nil, nil
		}
		if obj.(*corev1.Pod).UID != *pre.UID {
			return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, d.GetName(),
				errPrecondition)
		}
		return false, nil, nil
	}
}

var errPrecondition = apierrors.NewBadRequest("precondition failed: UID")

func markReady(pod *corev1.Pod) {
	pod.Status.Phase = corev1.PodRunning
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: containerSandbox, Ready: true}}
	if gated(pod) {
		pod.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: containerGate, Ready: true}}
	}
}

// existing is a pod as podFor would have made it for spec, in the given
// phase.
func existing(t *testing.T, spec sandbox.Spec, uid string, phase corev1.PodPhase) *corev1.Pod {
	t.Helper()
	spec, err := sandbox.ResolveSpec(spec)
	require.NoError(t, err)
	pod := podFor(spec, Options{Namespace: "default"})
	pod.UID = types.UID(uid)
	if phase == corev1.PodRunning {
		markReady(pod)
	} else {
		pod.Status.Phase = phase
	}
	return pod
}

func getPod(t *testing.T, cli *fake.Clientset, sid domain.ID) (*corev1.Pod, error) {
	t.Helper()
	return cli.CoreV1().Pods("default").Get(context.Background(), PodName(sid.String()), metav1.GetOptions{})
}

func TestNeverReadyPodIsDeleted(t *testing.T) {
	t.Parallel()
	p, cli := fakeCluster(t, true)
	sid := domain.NewID("ses")
	sb, err := p.Provision(context.Background(), sandbox.Spec{SessionID: sid, Image: "debian:bookworm"})
	require.ErrorIs(t, err, errNotReady)
	require.Nil(t, sb)
	_, err = getPod(t, cli, sid)
	require.True(t, apierrors.IsNotFound(err), "the pod this call created must be deleted (C-PROV-8): %v", err)
}

func TestStuckPodFailsFastAndIsDeleted(t *testing.T) {
	t.Parallel()
	p, cli := fakeCluster(t, true)
	cli.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		pod := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: containerSandbox,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: "no registry"}}}}
		return false, nil, nil
	})
	p.opts.ReadyTimeout = time.Minute
	sid := domain.NewID("ses")
	start := time.Now()
	_, err := p.Provision(context.Background(), sandbox.Spec{SessionID: sid, Image: "missing:1"})
	require.ErrorIs(t, err, errNotReady)
	require.ErrorIs(t, err, sandbox.ErrImageUnavailable, "the caller's image: a 4xx at the API (issue 11)")
	require.Contains(t, err.Error(), "ErrImagePull")
	require.Less(t, time.Since(start), 10*time.Second, "an unpullable image must not wait out the bound")
	_, err = getPod(t, cli, sid)
	require.True(t, apierrors.IsNotFound(err))
}

func TestFailedUngatedPodIsReplaced(t *testing.T) {
	t.Parallel()
	sid := domain.NewID("ses")
	spec := sandbox.Spec{SessionID: sid, Image: "debian:bookworm"}
	p, cli := fakeCluster(t, false, existing(t, spec, "dead", corev1.PodFailed))
	sb, err := p.Provision(context.Background(), spec)
	require.NoError(t, err)
	require.Equal(t, PodName(sid.String()), sb.ID())
	pod, err := getPod(t, cli, sid)
	require.NoError(t, err)
	require.NotEqual(t, types.UID("dead"), pod.UID, "a Failed pod must be replaced (B-6)")
	require.Equal(t, corev1.PodRunning, pod.Status.Phase)
}

func TestReadyPodIsAdoptedAndMismatchRefused(t *testing.T) {
	t.Parallel()
	sid := domain.NewID("ses")
	spec := sandbox.Spec{SessionID: sid, Image: "debian:bookworm"}
	p, cli := fakeCluster(t, false, existing(t, spec, "live", corev1.PodRunning))
	sb, err := p.Provision(context.Background(), spec)
	require.NoError(t, err)
	require.Equal(t, types.UID("live"), sb.(*handle).uid)

	other := spec
	other.Networking = domain.Networking{Type: domain.NetLimited}
	_, err = p.Provision(context.Background(), other)
	require.ErrorIs(t, err, sandbox.ErrSpecMismatch)
	pod, err := getPod(t, cli, sid)
	require.NoError(t, err)
	require.Equal(t, types.UID("live"), pod.UID, "a mismatch removes nothing (C-PROV-2)")
}

func TestForeignPodRefusedAndKept(t *testing.T) {
	t.Parallel()
	sid := domain.NewID("ses")
	pod := existing(t, sandbox.Spec{SessionID: sid, Image: "debian:bookworm"}, "theirs", corev1.PodRunning)
	delete(pod.Labels, sandbox.LabelSession)
	p, cli := fakeCluster(t, false, pod)
	ctx := context.Background()
	_, err := p.Provision(ctx, sandbox.Spec{SessionID: sid, Image: "debian:bookworm"})
	require.ErrorIs(t, err, errForeign)
	_, err = p.Attach(ctx, sid)
	require.ErrorIs(t, err, errForeign)
	require.NotErrorIs(t, err, sandbox.ErrNotFound)
	_, err = p.Export(ctx, sid, "/etc")
	require.ErrorIs(t, err, errForeign)
	require.NoError(t, p.Reap(ctx, sid))
	got, err := getPod(t, cli, sid)
	require.NoError(t, err, "a foreign pod is never deleted (C-PROV-5)")
	require.Equal(t, types.UID("theirs"), got.UID)
}

func TestDestroySparesANewerPod(t *testing.T) {
	t.Parallel()
	sid := domain.NewID("ses")
	spec := sandbox.Spec{SessionID: sid, Image: "debian:bookworm"}
	p, cli := fakeCluster(t, false, existing(t, spec, "newer", corev1.PodRunning))
	stale := (&handle{p: p, ns: "default", name: PodName(sid.String()), uid: "older"}).withPlane(nil)
	require.NoError(t, stale.Destroy(context.Background()), "the old pod is gone: success")
	got, err := getPod(t, cli, sid)
	require.NoError(t, err)
	require.Equal(t, types.UID("newer"), got.UID, "the UID precondition must keep the newer pod")
}

func TestAttachNotReadyIsNotFound(t *testing.T) {
	t.Parallel()
	sid := domain.NewID("ses")
	p, _ := fakeCluster(t, false, existing(t, sandbox.Spec{SessionID: sid, Image: "debian:bookworm"}, "p", corev1.PodPending))
	sb, err := p.Attach(context.Background(), sid)
	require.ErrorIs(t, err, sandbox.ErrNotFound)
	require.Nil(t, sb)
	_, err = p.Attach(context.Background(), domain.NewID("ses"))
	require.ErrorIs(t, err, sandbox.ErrNotFound)
}

func TestReapRevokesFirstAndDeletesByLabel(t *testing.T) {
	t.Parallel()
	sid := domain.NewID("ses")
	p, cli := fakeCluster(t, false, existing(t, sandbox.Spec{SessionID: sid, Image: "debian:bookworm"}, "p", corev1.PodRunning))
	j := &journal{revoke: errPrecondition}
	p.opts.Tokens = j
	require.Error(t, p.Reap(context.Background(), sid))
	_, err := getPod(t, cli, sid)
	require.NoError(t, err, "a failed revoke removes nothing (C-REAP-1)")
	require.Equal(t, []string{"revoke"}, j.list(), "one revoke per Reap")
	p.opts.Tokens = nil
	require.NoError(t, p.Reap(context.Background(), sid))
	_, err = getPod(t, cli, sid)
	require.True(t, apierrors.IsNotFound(err))
	require.NoError(t, p.Reap(context.Background(), sid), "reaping twice is a no-op")
}

func TestProvisionRefusesBeforeAnyCall(t *testing.T) {
	t.Parallel()
	p, cli := fakeCluster(t, false)
	p.opts.NetsetupImage = ""
	ctx := context.Background()
	for name, spec := range map[string]sandbox.Spec{
		"bad env":             {SessionID: domain.NewID("ses"), Image: "x", Env: map[string]string{"A=B": "x"}},
		"no image":            {SessionID: domain.NewID("ses")},
		"limited no netsetup": {SessionID: domain.NewID("ses"), Image: "x", Networking: domain.Networking{Type: domain.NetLimited}},
		"gated":               {SessionID: domain.NewID("ses"), Image: "x", Gate: &sandbox.GateSpec{Image: "g"}},
		"gated without tokens": {SessionID: domain.NewID("ses"), Image: "x",
			Gate: &sandbox.GateSpec{Image: "g", ControlplaneURL: "http://10.0.0.1:7070"}},
	} {
		_, err := p.Provision(ctx, spec)
		require.Error(t, err, name)
		if name == "gated without tokens" {
			require.ErrorIs(t, err, errNoTokens)
		}
	}
	require.Empty(t, cli.Actions(), "validation happens before any API call")
}

// Owned lists only pods carrying the provider's own labels, so an executor
// never sees (nor reaps as an orphan) another's pod.
func TestOwnedScopedToLabels(t *testing.T) {
	t.Parallel()
	mine, other := domain.NewID("ses"), domain.NewID("ses")
	a := existing(t, sandbox.Spec{SessionID: mine, Image: "debian:bookworm"}, "a", corev1.PodRunning)
	a.Labels["team"] = "x"
	b := existing(t, sandbox.Spec{SessionID: other, Image: "debian:bookworm"}, "b", corev1.PodRunning)
	p, _ := fakeCluster(t, false, a, b)
	all, err := p.Owned(context.Background())
	require.NoError(t, err)
	require.ElementsMatch(t, []domain.ID{mine, other}, all, "no labels: every labelled pod")
	p.opts.Labels = map[string]string{"team": "x"}
	ids, err := p.Owned(context.Background())
	require.NoError(t, err)
	require.Equal(t, []domain.ID{mine}, ids)
}
