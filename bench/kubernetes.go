package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/sandgate/sandgate/adapters/kubernetes"
	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/ports"
)

// k8sRows compare the Kubernetes adapter with raw client-go against the
// cluster SANDGATE_TEST_KUBECONFIG names (the test cluster of make
// k8s-up); without one they report an error naming the variable.
var k8sRows = []rowSpec{
	{"k8s-exec-true", "<=1.15", k8sExecTrue((*env).k8s)},
	{"k8s-bulk-10k", "<=1.30", func(ctx context.Context, e *env) (Row, error) {
		k, err := e.k8s(ctx)
		if err != nil {
			return Row{}, err
		}
		// Both sides' inputs are made before any clock starts, and neither
		// side's directories exist: tar makes missing parents itself.
		count, n := e.bulkCount(), e.iterations(3, 1)
		ours, raw := bulkInputs(n, count)
		row, err := latencyRow(n, func(i int) error {
			return k.sb.WriteFiles(ctx, ours[i])
		}, func(i int) error {
			return k.rawExec(ctx, bytes.NewReader(raw[i]), "tar", "-x", "-C", "/")
		})
		row.Note = fmt.Sprintf("%d files", count)
		return row, err
	}},
	// Over the agent, against the same raw exec.
	{"agent-k8s-exec-true", "<=0.10", k8sExecTrue((*env).k8sAgent)},
}

// k8sExecTrue: Exec("true") in the pod of k8sEnv against one raw
// remotecommand exec of true in it.
func k8sExecTrue(of func(*env, context.Context) (*k8sEnv, error)) func(context.Context, *env) (Row, error) {
	return func(ctx context.Context, e *env) (Row, error) {
		k, err := of(e, ctx)
		if err != nil {
			return Row{}, err
		}
		return latencyRow(e.iterations(30, 5), func(int) error { return execOK(ctx, k.sb, 0) },
			func(int) error { return k.rawExec(ctx, nil, "true") })
	}
}

// k8sEnv is the Kubernetes rows' world: the raw client and one sandbox pod.
type k8sEnv struct {
	cfg *rest.Config
	cli k8s.Interface
	p   *kubernetes.Provider
	sid domain.ID
	sb  ports.Sandbox
}

// lazyK8s is a k8sEnv made on first use.
type lazyK8s struct {
	once sync.Once
	env  *k8sEnv
	err  error
}

// k8sPlain is the fallback's (a provider without the agent, as the old
// rows measure), k8sWithAgent the agent's.
var k8sPlain, k8sWithAgent lazyK8s

// k8s provisions the Kubernetes rows' sandbox on first use.
func (e *env) k8s(ctx context.Context) (*k8sEnv, error) {
	k8sPlain.once.Do(func() { k8sPlain.env, k8sPlain.err = newK8sEnv(ctx, e.image, "") })
	return k8sPlain.env, k8sPlain.err
}

// k8sAgent provisions the agent rows' pod on first use, after importing
// the agent's image into the cluster's containerd (the cluster has no
// registry) the way make k8s-up imports the others: build/k8s's script,
// a no-op when the same build is there.
func (e *env) k8sAgent(ctx context.Context) (*k8sEnv, error) {
	k8sWithAgent.once.Do(func() {
		out, err := exec.CommandContext(ctx, "build/k8s/import-images.sh", e.agentImage).CombinedOutput()
		if err != nil {
			k8sWithAgent.err = fmt.Errorf("import %s into the cluster (run from the repository's root): %w: %s", e.agentImage, err, out)
			return
		}
		k8sWithAgent.env, k8sWithAgent.err = newK8sEnv(ctx, e.image, e.agentImage)
	})
	return k8sWithAgent.env, k8sWithAgent.err
}

func newK8sEnv(ctx context.Context, image, agentImage string) (*k8sEnv, error) {
	path := os.Getenv("SANDGATE_TEST_KUBECONFIG")
	if path == "" {
		return nil, errors.New("SANDGATE_TEST_KUBECONFIG is not set (make k8s-up)")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, err
	}
	cli, err := k8s.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	p, err := kubernetes.New(cfg, kubernetes.Options{Labels: map[string]string{benchLabel: "1"}, AgentImage: agentImage, AgentKey: agentKey})
	if err != nil {
		return nil, err
	}
	k := &k8sEnv{cfg: cfg, cli: cli, p: p, sid: domain.NewID("ses")}
	k.removeLeftovers(ctx)
	k.sb, err = p.Provision(ctx, sandbox.Spec{SessionID: k.sid, Image: image})
	if err != nil {
		return nil, fmt.Errorf("provision the bench pod: %w", err)
	}
	return k, nil
}

// closeK8s removes the bench's pods, if the rows ran (both envs carry the
// same label: either removes all).
func closeK8s() {
	for _, k := range []*k8sEnv{k8sPlain.env, k8sWithAgent.env} {
		if k != nil {
			k.removeLeftovers(context.Background())
		}
	}
}

// removeLeftovers deletes every pod carrying the bench label.
func (k *k8sEnv) removeLeftovers(ctx context.Context) {
	zero := int64(0)
	_ = k.cli.CoreV1().Pods("default").DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero},
		metav1.ListOptions{LabelSelector: benchLabel})
}

// rawExec is the baseline: one remotecommand exec over WebSocket (the
// protocol the adapter tries first), with nothing of ours around it.
func (k *k8sEnv) rawExec(ctx context.Context, stdin io.Reader, argv ...string) error {
	req := k.cli.CoreV1().RESTClient().Post().Resource("pods").Namespace("default").Name(k.sb.ID()).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: "sandbox", Command: argv, Stdin: stdin != nil, Stdout: true, Stderr: true},
			scheme.ParameterCodec)
	ex, err := remotecommand.NewWebSocketExecutor(k.cfg, "GET", req.URL().String())
	if err != nil {
		return err
	}
	return ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdin, Stdout: io.Discard, Stderr: io.Discard})
}
