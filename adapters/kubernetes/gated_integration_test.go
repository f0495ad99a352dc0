//go:build integration

package kubernetes_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/sandgate/sandgate/adapters/kubernetes"
	"github.com/sandgate/sandgate/adapters/sessionstore"
	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/core/session"
	"github.com/sandgate/sandgate/internal/testworld"
	"github.com/sandgate/sandgate/ports/porttest"
)

// The gated rows' world on the cluster: the control plane listens on the
// pod bridge's host address (build/k8s: the one address beyond their own
// subnet that pods reach), the origin is a pod on the same bridge, and the
// gate image is the one `make gate-image` built, imported into the
// cluster's containerd.
const (
	originPort     = 8080
	originLabelVal = "kubernetes-conformance-origin"
	gateUIDImage   = "sandgate-porttest/gateuid:1"
)

// gatedWorld is what gated sandboxes on the test cluster need: the gate
// image (imported), a control plane on the pod bridge's host address, and
// an origin pod serving body.
type gatedWorld struct {
	gateImage string
	store     *sessionstore.Store
	url       string // the control plane's base URL
	originIP  string
	body      string
}

func newGatedWorld(t *testing.T, cli k8s.Interface) *gatedWorld {
	t.Helper()
	w := &gatedWorld{gateImage: os.Getenv(testworld.GateImageEnv), body: "sandgate-origin-" + randomHex(t)}
	if w.gateImage == "" {
		w.gateImage = testworld.BaseGateImage
	}
	importImage(t, w.gateImage)
	importImage(t, netsetupImage) // the origin's image: a test may run alone
	w.store, w.url = testworld.ServeControlPlane(t, testworld.PodBridgeAddr(t), t.TempDir())
	w.originIP = startOrigin(t, cli, w.body)
	return w
}

// gate registers sid with networking and returns the GateSpec of its pod.
func (w *gatedWorld) gate(t *testing.T, sid domain.ID, networking domain.Networking) *sandbox.GateSpec {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, w.store.PutSession(c, session.Session{ID: sid, Networking: networking}))
	return &sandbox.GateSpec{Image: w.gateImage, ControlplaneURL: w.url}
}

// origin is the origin's "ip:port".
func (w *gatedWorld) origin() string { return net.JoinHostPort(w.originIP, fmt.Sprint(originPort)) }

// gatedHarness builds the world of the gated rows (CONTRACT §9, B-1, B-2,
// B-8) on the cluster.
func gatedHarness(t *testing.T, cfg *rest.Config, cli k8s.Interface, base string) *porttest.GatedHarness {
	t.Helper()
	buildImage(t, gateUIDImage, "ARG BASE\nFROM ${BASE}\nUSER 64250\n", base)
	importImage(t, gateUIDImage)
	w := newGatedWorld(t, cli)
	return &porttest.GatedHarness{
		Gate: func(rt *testing.T, sid domain.ID) *sandbox.GateSpec {
			return w.gate(rt, sid, domain.Networking{Type: domain.NetLimited, AllowedHosts: []string{w.origin()}})
		},
		Tokens:       w.store,
		Origin:       w.origin(),
		OriginBody:   w.body,
		GateUIDImage: gateUIDImage,
		StopGate: func(ctx context.Context, sid domain.ID) error {
			return stopGate(ctx, cfg, cli, kubernetes.PodName(sid.String()))
		},
	}
}

// startOrigin runs busybox's httpd in a pod serving body at /, waits until
// it is ready and returns its IP. The pod is deleted when the test ends.
func startOrigin(t *testing.T, cli k8s.Interface, body string) string {
	t.Helper()
	removeWithLabel(t, cli, originLabelVal)
	nobody := int64(65534)
	no := false
	zero := int64(0)
	script := fmt.Sprintf("mkdir -p /tmp/www && echo %s >/tmp/www/index.html && exec httpd -f -p %d -h /tmp/www", body, originPort)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "sandgate-test-origin-" + randomHex(t)[:8],
			Labels: map[string]string{testLabel: originLabelVal}},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			AutomountServiceAccountToken:  &no,
			TerminationGracePeriodSeconds: &zero,
			Containers: []corev1.Container{{Name: "origin", Image: netsetupImage, ImagePullPolicy: corev1.PullIfNotPresent,
				Command:         []string{"/bin/sh", "-c", script},
				SecurityContext: &corev1.SecurityContext{RunAsUser: &nobody, AllowPrivilegeEscalation: &no},
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
					corev1.ResourceMemory: resource.MustParse("32Mi")}},
				ReadinessProbe: &corev1.Probe{PeriodSeconds: 1, ProbeHandler: corev1.ProbeHandler{
					TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(originPort)}}},
			}},
		},
	}
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pods := cli.CoreV1().Pods(namespace)
	created, err := pods.Create(c, pod, metav1.CreateOptions{})
	require.NoError(t, err, "create the origin pod")
	t.Cleanup(func() { removeWithLabel(t, cli, originLabelVal) })
	for {
		got, err := pods.Get(c, created.Name, metav1.GetOptions{})
		require.NoError(t, err, "the origin pod did not become ready")
		for _, cs := range got.Status.ContainerStatuses {
			if cs.Ready && got.Status.PodIP != "" {
				return got.Status.PodIP
			}
		}
		require.NotEqual(t, corev1.PodFailed, got.Status.Phase, "the origin pod failed: %+v", got.Status)
		time.Sleep(200 * time.Millisecond)
	}
}

// stopGate makes the gate sidecar of pod exit (SIGTERM to its process, which
// shuts down cleanly) and waits until the kubelet has restarted it: what
// B-8 is on Kubernetes, where a sidecar cannot be stopped and kept.
func stopGate(ctx context.Context, cfg *rest.Config, cli k8s.Interface, name string) error {
	pods := cli.CoreV1().Pods(namespace)
	before, err := pods.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	restarts := gateRestarts(before)
	req := cli.CoreV1().RESTClient().Post().Resource("pods").Namespace(namespace).Name(name).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: "gate", Command: []string{"/bin/sh", "-c", "kill 1"},
			Stdout: true, Stderr: true}, scheme.ParameterCodec)
	ex, err := remotecommand.NewSPDYExecutor(cfg, "POST", req.URL())
	if err != nil {
		return err
	}
	// One buffer each: the executor copies the two streams concurrently.
	var stdout, stderr bytes.Buffer
	if err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr}); err != nil {
		return fmt.Errorf("kill the gate: %w: %s%s", err, stdout.String(), stderr.String())
	}
	for {
		got, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if gateRestarts(got) > restarts {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the gate was not restarted: %w", ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func gateRestarts(pod *corev1.Pod) int32 {
	for _, cs := range pod.Status.InitContainerStatuses {
		if cs.Name == "gate" {
			return cs.RestartCount
		}
	}
	return 0
}

// buildImage builds tag FROM base with the local Docker engine.
func buildImage(t *testing.T, tag, dockerfile, base string) {
	t.Helper()
	cmd := exec.Command("docker", "build", "-q", "-t", tag, "--build-arg", "BASE="+base,
		"--label", testLabel+"="+testLabelVal, "-")
	cmd.Env = append(os.Environ(), "DOCKER_BUILDKIT=0")
	cmd.Stdin = strings.NewReader(dockerfile)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "docker build %s: %s", tag, out)
}

// removeWithLabel deletes every pod carrying testLabel=value, without grace.
func removeWithLabel(t *testing.T, cli k8s.Interface, value string) {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	zero := int64(0)
	err := cli.CoreV1().Pods(namespace).DeleteCollection(c, metav1.DeleteOptions{GracePeriodSeconds: &zero},
		metav1.ListOptions{LabelSelector: testLabel + "=" + value})
	require.NoError(t, err)
}

func randomHex(t *testing.T) string {
	t.Helper()
	b := make([]byte, 8)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return hex.EncodeToString(b)
}
