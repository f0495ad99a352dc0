package kubernetes

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/gatewire"
	"github.com/sandgate/sandgate/core/sandbox"
)

const testGateToken = "sggt_0123456789abcdefghijklmnopqrstuvwxyzABCDEF"

// journal records, in order, what the provider did to the cluster and to
// its gate tokens (it is the provider's ports.GateTokenIssuer), so the
// tests can check C-GATE-2's ordering.
type journal struct {
	mu      sync.Mutex
	entries []string
	persist error
	revoke  error
}

func (j *journal) add(e string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.entries = append(j.entries, e)
}

func (j *journal) list() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]string(nil), j.entries...)
}

func (j *journal) Generate() string { j.add("generate"); return testGateToken }

func (j *journal) Persist(_ context.Context, _ domain.ID, token string) error {
	j.add("persist")
	if token != testGateToken {
		return errors.New("persisted a token that was not generated")
	}
	return j.persist
}

func (j *journal) Revoke(context.Context, domain.ID) error { j.add("revoke"); return j.revoke }

// gatedCluster is fakeCluster with j as its gate tokens, whose pod
// creates and patches are journaled.
func gatedCluster(t *testing.T, j *journal, objs ...runtime.Object) (*Provider, *fake.Clientset) {
	t.Helper()
	p, cli := fakeCluster(t, false, objs...)
	p.opts.Tokens = j
	for _, verb := range []string{"create", "patch", "delete"} {
		cli.PrependReactor(verb, "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
			j.add(verb)
			return false, nil, nil
		})
	}
	return p, cli
}

// existingGated is a released, ready gated pod as Provision makes it.
func existingGated(t *testing.T, spec sandbox.Spec, uid string) *corev1.Pod {
	t.Helper()
	pod := existing(t, spec, uid, corev1.PodPending)
	gatePod(pod, resolved(t, spec), testGateToken)
	pod.Spec.SchedulingGates = nil
	markReady(pod)
	return pod
}

func gatedSpec() sandbox.Spec {
	return sandbox.Spec{SessionID: domain.NewID("ses"), Image: "debian:bookworm",
		Networking: domain.Networking{Type: domain.NetLimited, AllowedHosts: []string{"api.example.com"}},
		Env:        map[string]string{"TOKEN": "sgph_placeholder"},
		Gate:       &sandbox.GateSpec{Image: "sandgate/gate:dev", ControlplaneURL: "http://10.0.0.1:7070"}}
}

func TestGatedPodShape(t *testing.T) {
	t.Parallel()
	spec := resolved(t, gatedSpec())
	pod := podFor(spec, Options{Namespace: "sbx", NetsetupImage: "busybox:1.35"})
	gatePod(pod, spec, testGateToken)

	var names []string
	for _, c := range pod.Spec.InitContainers {
		names = append(names, c.Name)
	}
	require.Equal(t, []string{containerNetsetup, containerGate, containerTrust}, names, "firewall, then the gate, then trust")
	require.Equal(t, []corev1.PodSchedulingGate{{Name: schedulingGate}}, pod.Spec.SchedulingGates)

	fw := pod.Spec.InitContainers[0]
	require.Equal(t, "sandgate/gate:dev", fw.Image)
	require.Equal(t, []string{"-firewall"}, fw.Args)
	require.Equal(t, int64(0), *fw.SecurityContext.RunAsUser)
	require.Equal(t, []corev1.Capability{"NET_ADMIN"}, fw.SecurityContext.Capabilities.Add, "NET_ADMIN only")
	require.Equal(t, []corev1.Capability{"ALL"}, fw.SecurityContext.Capabilities.Drop)

	g := pod.Spec.InitContainers[1]
	require.Equal(t, corev1.ContainerRestartPolicyAlways, *g.RestartPolicy, "a native sidecar")
	require.Equal(t, int64(gatewire.UID), *g.SecurityContext.RunAsUser)
	require.True(t, *g.SecurityContext.RunAsNonRoot)
	require.Empty(t, g.SecurityContext.Capabilities.Add, "the long-running gate holds no capability")
	require.Equal(t, []corev1.Capability{"ALL"}, g.SecurityContext.Capabilities.Drop)
	require.False(t, *g.SecurityContext.AllowPrivilegeEscalation)
	require.True(t, *g.SecurityContext.ReadOnlyRootFilesystem)
	require.Equal(t, []string{"gate", "-healthcheck"}, g.StartupProbe.Exec.Command)
	require.Equal(t, []string{"gate", "-healthcheck"}, g.ReadinessProbe.Exec.Command)
	env := map[string]string{}
	for _, e := range g.Env {
		env[e.Name] = e.Value
	}
	require.Equal(t, testGateToken, env["GATE_TOKEN"])
	require.Equal(t, "preinstalled", env["GATE_FIREWALL"])
	require.Equal(t, "http://10.0.0.1:7070", env["CONTROLPLANE_URL"])

	trust := pod.Spec.InitContainers[2]
	require.Equal(t, "debian:bookworm", trust.Image, "trust runs the sandbox image")
	require.Equal(t, pod.Spec.Containers[0].SecurityContext, trust.SecurityContext, "as the sandbox's user")

	sb := pod.Spec.Containers[0]
	sbEnv := map[string]string{}
	for _, e := range sb.Env {
		sbEnv[e.Name] = e.Value
	}
	require.Equal(t, gatewire.ProxyURL, sbEnv["HTTPS_PROXY"])
	require.Equal(t, gatewire.SandboxCABundle, sbEnv["SSL_CERT_FILE"])
	require.Equal(t, "sgph_placeholder", sbEnv["TOKEN"])
	for _, c := range []corev1.Container{sb, trust} {
		for _, e := range c.Env {
			require.NotContains(t, e.Value, testGateToken, "the gate token never enters the sandbox")
		}
	}
	mounts := map[string]bool{}
	for _, m := range sb.VolumeMounts {
		mounts[m.MountPath] = m.ReadOnly
	}
	require.Equal(t, map[string]bool{gatewire.SandboxCADir: false, gateCAMount: true}, mounts)
	o := observe(pod)
	require.True(t, o.Gated)
}

func TestTrustScriptNamesTheGateUID(t *testing.T) {
	t.Parallel()
	require.Contains(t, trustScript, `"$(id -u)" = 64250`)
	require.Contains(t, trustScript, "exit 86")
	require.True(t, strings.HasPrefix(gatewire.CAFile, dirOf(gatewire.CAFile)+"/"))
}

// TestGatedCreateOrder: generate, create (held), persist, release — never
// a persist before this call won the name (C-GATE-2).
func TestGatedCreateOrder(t *testing.T) {
	t.Parallel()
	j := &journal{}
	p, cli := gatedCluster(t, j)
	spec := gatedSpec()
	sb, err := p.Provision(context.Background(), spec)
	require.NoError(t, err)
	require.NotNil(t, sb)
	require.Equal(t, []string{"generate", "create", "persist", "patch"}, j.list())
	pod, err := getPod(t, cli, spec.SessionID)
	require.NoError(t, err)
	require.Empty(t, pod.Spec.SchedulingGates, "released")

	again, err := p.Provision(context.Background(), spec)
	require.NoError(t, err)
	require.Equal(t, sb.ID(), again.ID())
	require.Equal(t, []string{"generate", "create", "persist", "patch"}, j.list(), "adoption mints nothing")
}

func TestGatedLostRacePersistsNothing(t *testing.T) {
	t.Parallel()
	j := &journal{}
	spec := gatedSpec()
	winner := existingGated(t, spec, "uid-winner")
	p, cli := gatedCluster(t, j)
	// The name is taken between this call's Get and its Create.
	cli.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		require.NoError(t, cli.Tracker().Add(winner))
		return true, nil, apierrors.NewAlreadyExists(corev1.Resource("pods"), winner.Name)
	})
	sb, err := p.Provision(context.Background(), spec)
	require.NoError(t, err)
	require.Equal(t, winner.Name, sb.ID())
	require.NotContains(t, j.list(), "persist", "a lost race persists nothing")
	require.Equal(t, 1, strings.Count(strings.Join(j.list(), " "), "generate"))
}

func TestGatedPersistFailureDeletesThePod(t *testing.T) {
	t.Parallel()
	j := &journal{persist: errors.New("store down")}
	p, cli := gatedCluster(t, j)
	spec := gatedSpec()
	_, err := p.Provision(context.Background(), spec)
	require.ErrorContains(t, err, "store down")
	_, err = getPod(t, cli, spec.SessionID)
	require.True(t, apierrors.IsNotFound(err), "the held pod is deleted: %v", err)
	require.NotContains(t, j.list(), "patch", "never released")
}

func TestGateUIDImageRefusedAndDeleted(t *testing.T) {
	t.Parallel()
	j := &journal{}
	p, cli := fakeCluster(t, true)
	p.opts.Tokens = j
	cli.PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		obj, err := cli.Tracker().Get(corev1.SchemeGroupVersion.WithResource("pods"), a.GetNamespace(), a.(k8stesting.PatchAction).GetName())
		require.NoError(t, err)
		pod := obj.(*corev1.Pod).DeepCopy()
		pod.Spec.SchedulingGates = nil
		pod.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: containerTrust,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: exitGateUID}}}}
		require.NoError(t, cli.Tracker().Update(corev1.SchemeGroupVersion.WithResource("pods"), pod, pod.Namespace))
		return true, pod, nil
	})
	spec := gatedSpec()
	_, err := p.Provision(context.Background(), spec)
	require.ErrorIs(t, err, sandbox.ErrGateUIDImage)
	_, err = getPod(t, cli, spec.SessionID)
	require.True(t, apierrors.IsNotFound(err), "nothing is left: %v", err)
}

// TestHeldOrphanReplaced: a gated pod still held long after its creation is
// what a crashed provision left; it is deleted and a new pair created.
func TestHeldOrphanReplaced(t *testing.T) {
	t.Parallel()
	j := &journal{}
	spec := gatedSpec()
	old := existing(t, spec, "uid-old", corev1.PodPending)
	gatePod(old, resolved(t, spec), "sggt_lost")
	old.CreationTimestamp = metav1.NewTime(time.Now().Add(-2 * raceWait))
	p, cli := gatedCluster(t, j, old)
	sb, err := p.Provision(context.Background(), spec)
	require.NoError(t, err)
	pod, err := getPod(t, cli, spec.SessionID)
	require.NoError(t, err)
	require.NotEqual(t, old.UID, pod.UID)
	require.Equal(t, pod.Name, sb.ID())
	require.Equal(t, []string{"delete", "generate", "create", "persist", "patch"}, j.list())
}

func TestGatedToUngatedRevokesThenRebuilds(t *testing.T) {
	t.Parallel()
	j := &journal{}
	spec := gatedSpec()
	old := existingGated(t, spec, "uid-old")
	p, cli := gatedCluster(t, j, old)
	ungated := spec
	ungated.Gate = nil
	_, err := p.Provision(context.Background(), ungated)
	require.NoError(t, err)
	require.Equal(t, []string{"revoke", "delete", "create"}, j.list(), "revoked before anything is removed")
	pod, err := getPod(t, cli, spec.SessionID)
	require.NoError(t, err)
	require.False(t, gated(pod))
}

func TestReadyNeedsTheGate(t *testing.T) {
	t.Parallel()
	spec := resolved(t, gatedSpec())
	pod := podFor(spec, Options{})
	gatePod(pod, spec, testGateToken)
	markReady(pod)
	require.True(t, ready(pod))
	pod.Status.InitContainerStatuses[0].Ready = false
	require.False(t, ready(pod), "a gated sandbox is ready only with its gate (C-PROV-8)")
}
