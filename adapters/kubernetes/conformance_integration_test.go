//go:build integration

package kubernetes_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sandgate/sandgate/adapters/kubernetes"
	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/internal/seccomp"
	"github.com/sandgate/sandgate/ports"
	"github.com/sandgate/sandgate/ports/porttest"
)

// The test's world: a kubeconfig (SANDGATE_TEST_KUBECONFIG), the namespace
// its pods go to, the label every one of them carries (so a crashed run's
// leftovers are found by the next), and the images it imports into the
// cluster's containerd from the local Docker engine (nothing can be pulled).
const (
	envKubeconfig = "SANDGATE_TEST_KUBECONFIG"
	envContainerd = "SANDGATE_TEST_K8S_CONTAINERD"
	// envKubeletRoot is the test node's kubelet --root-dir, under whose
	// seccomp/ the sandboxes' Localhost profile is installed.
	envKubeletRoot = "SANDGATE_TEST_KUBELET_ROOT"
	testLabel      = "dev.sandgate.test"
	testLabelVal   = "kubernetes-conformance"
	namespace      = "default"
	nonRootImage   = "sandgate-porttest/nonroot:1"
	nonRootUID     = 1000
	netsetupImage  = "busybox:1.35"
)

// nonRootDockerfile is the NonRootImage the suite needs: the base image with
// a uid-1000 user that owns the default workdir.
const nonRootDockerfile = `ARG BASE
FROM ${BASE}
RUN useradd -u 1000 -m -s /bin/bash sandbox && mkdir -p /workspace && chown 1000:1000 /workspace
USER 1000
WORKDIR /workspace
`

// TestConformance runs the sandbox conformance suite against the cluster
// SANDGATE_TEST_KUBECONFIG names. Without one it skips with the reason,
// except under CI=true, where that is a failure.
func TestConformance(t *testing.T) {
	cfg, cli, base := connect(t)
	buildImage(t, nonRootImage, nonRootDockerfile, base)
	for _, img := range []string{base, nonRootImage, netsetupImage} {
		importImage(t, img)
	}
	removeLabelled(t, cli) // what a crashed earlier run left
	t.Cleanup(func() {
		requireNothingLeft(t, cli)
		removeLabelled(t, cli)
	})

	labels := map[string]string{testLabel: testLabelVal}
	profile := installSeccompProfile(t)
	gated := gatedHarness(t, cfg, cli, base)
	agentImage := os.Getenv("SANDGATE_TEST_AGENT_IMAGE")
	if agentImage == "" {
		agentImage = "sandgate/agent:dev"
	}
	importImage(t, agentImage)
	// Every row runs over the in-sandbox agent and over the exec fallback:
	// both answer the same contract (issue 13).
	for _, path := range []struct{ name, agentImage string }{{"agent", agentImage}, {"fallback", ""}} {
		t.Run(path.name, func(t *testing.T) {
			conformance(t, cfg, cli, base, conformanceOpts{labels: labels, profile: profile, gated: gated,
				agentImage: path.agentImage})
		})
	}
}

type conformanceOpts struct {
	labels     map[string]string
	profile    string
	gated      *porttest.GatedHarness
	agentImage string
}

func conformance(t *testing.T, cfg *rest.Config, cli k8s.Interface, base string, o conformanceOpts) {
	var (
		mu   sync.Mutex
		made []*kubernetes.Provider
	)
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, p := range made {
			_ = p.Close()
		}
	})
	newProvider := func(tk ports.GateTokenIssuer) ports.Provider {
		p, err := kubernetes.New(cfg, kubernetes.Options{Namespace: namespace, Labels: o.labels, Tokens: tk,
			NetsetupImage: netsetupImage, SeccompProfile: o.profile, AgentImage: o.agentImage, AgentKey: agentKey})
		require.NoError(t, err)
		mu.Lock()
		made = append(made, p)
		mu.Unlock()
		return p
	}
	porttest.Run(t, porttest.Harness{
		Provider:     newProvider(o.gated.Tokens),
		Image:        base,
		NonRootImage: nonRootImage,
		NonRootUID:   nonRootUID,
		// Kubernetes cannot stop and keep a pod, has no init, no pids limit
		// per container and does not clamp CPU (docs/DIVERGENCES.md): the
		// suite runs the counterparts of those rows instead.
		Caps:       porttest.Capabilities{Agent: o.agentImage != ""},
		WithTokens: newProvider,
		Foreign: func(ctx context.Context, sid domain.ID) (porttest.ForeignHolder, error) {
			return createForeign(ctx, cli, base, kubernetes.PodName(sid.String()))
		},
		Parallelism: 4,
		Gated:       o.gated,
	})
}

// connect returns the test cluster's client (rate limits raised: rows run
// in parallel) and the base image of the sandboxes, imported into the
// cluster. Without a cluster it skips, or fails under CI=true.
func connect(t *testing.T) (*rest.Config, k8s.Interface, string) {
	t.Helper()
	kubeconfig := os.Getenv(envKubeconfig)
	if kubeconfig == "" {
		unavailable(t, "%s is not set (make k8s-up writes one)", envKubeconfig)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	require.NoError(t, err)
	cfg.QPS, cfg.Burst = 100, 200
	cli, err := k8s.NewForConfig(cfg)
	require.NoError(t, err)
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cli.CoreV1().Namespaces().Get(c, namespace, metav1.GetOptions{}); err != nil {
		unavailable(t, "cluster at %s does not answer: %v", kubeconfig, err)
	}
	base := os.Getenv("SANDGATE_TEST_IMAGE")
	if base == "" {
		base = "debian:bookworm"
	}
	return cfg, cli, base
}

// unavailable skips, or fails under CI=true: CI never goes green by skipping.
func unavailable(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("kubernetes unavailable under CI: "+format, args...)
	}
	t.Skipf("kubernetes unavailable: "+format, args...)
}

// installSeccompProfile writes `executor seccomp-profile` where the test
// node's kubelet finds Localhost profiles — what an operator does on every
// node (docs/OPERATIONS.md, SANDGATE_K8S_SECCOMP_PROFILE) — and returns its path
// relative to that root.
func installSeccompProfile(t *testing.T) string {
	t.Helper()
	root := os.Getenv(envKubeletRoot)
	if root == "" {
		root = "/var/lib/k8s-lite/kubelet"
	}
	if _, err := os.Stat(root); err != nil {
		unavailable(t, "the kubelet's root %s (%s): %v", root, envKubeletRoot, err)
	}
	const rel = "sandgate-test/sandbox.json"
	path := filepath.Join(root, "seccomp", rel)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(seccomp.Profile()), 0o644))
	return rel
}

// containerdSocket is the cluster's containerd, where images are imported.
func containerdSocket() string {
	if s := os.Getenv(envContainerd); s != "" {
		return s
	}
	return "/run/k8s-lite/containerd/containerd.sock"
}

// importImage copies a local Docker image into the cluster's containerd,
// unless the same build (labelled with its Docker image id, as
// build/k8s/import-images.sh labels its imports) is there already.
func importImage(t *testing.T, ref string) {
	t.Helper()
	cmd := exec.Command("bash", "-c", importScript, "import", ref, containerdSocket())
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "import %s into the cluster: %s", ref, out)
}

// importScript: $1 a Docker image name, $2 the containerd socket.
const importScript = `set -euo pipefail
n=$1
case "$n" in *:*|*@*) ;; *) n=$n:latest ;; esac
if [[ "$n" != */* ]]; then
	n=docker.io/library/$n
else
	case "${n%%/*}" in *.*|*:*|localhost) ;; *) n=docker.io/$n ;; esac
fi
id=$(docker image inspect -f '{{.Id}}' "$1")
ctr=(ctr -a "$2" -n k8s.io)
if "${ctr[@]}" images ls "name==$n" | grep -qF "dev.sandgate.docker-id=$id"; then exit 0; fi
docker save "$1" | "${ctr[@]}" images import - >/dev/null
"${ctr[@]}" images label "$n" "dev.sandgate.docker-id=$id" >/dev/null
`

// removeLabelled deletes every pod of this test's label, without grace.
func removeLabelled(t *testing.T, cli k8s.Interface) { removeWithLabel(t, cli, testLabelVal) }

// requireNothingLeft fails the test if the suite left any pod of its label
// behind (every row reaps what it creates).
func requireNothingLeft(t *testing.T, cli k8s.Interface) {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	left, err := cli.CoreV1().Pods(namespace).List(c, metav1.ListOptions{LabelSelector: testLabel + "=" + testLabelVal})
	require.NoError(t, err)
	var names []string
	for _, p := range left.Items {
		names = append(names, p.Name)
	}
	if len(names) > 0 && !t.Failed() {
		t.Errorf("the suite left %d labelled pods behind: %v", len(names), names)
	}
}

// foreign is a pod holding a sandbox's name without the ownership label
// (C-PROV-5).
type foreign struct {
	cli k8s.Interface
	pod *corev1.Pod
}

func createForeign(ctx context.Context, cli k8s.Interface, image, name string) (*foreign, error) {
	zero := int64(0)
	pod, err := cli.CoreV1().Pods(namespace).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{testLabel: testLabelVal}},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: &zero,
			Containers: []corev1.Container{{Name: "foreign", Image: image, ImagePullPolicy: corev1.PullIfNotPresent,
				Command: []string{"/bin/bash", "-c", "trap 'exit 0' TERM; while :; do sleep 1; done"}}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create foreign %s: %w", name, err)
	}
	return &foreign{cli: cli, pod: pod}, nil
}

// Exists implements porttest.ForeignHolder.
func (f *foreign) Exists(ctx context.Context) (bool, error) {
	got, err := f.cli.CoreV1().Pods(namespace).Get(ctx, f.pod.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil && got.UID == f.pod.UID, err
}

// Remove implements porttest.ForeignHolder.
func (f *foreign) Remove(ctx context.Context) error {
	zero := int64(0)
	err := f.cli.CoreV1().Pods(namespace).Delete(ctx, f.pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero,
		Preconditions: &metav1.Preconditions{UID: &f.pod.UID}})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
