//go:build integration

// The chart's end-to-end test: the executor image built from this tree,
// imported into the test cluster, installed with the chart, serving one
// session whose sandbox pod runs `echo` (the executor in-cluster on the
// kubernetes backend, with hostNetwork and the API server's loopback address,
// since the test cluster has no kube-proxy and pods no route to the host's
// loopback).

package helm

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/adapters/httpapi"
	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/gatewire"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/core/session"
	"github.com/sandgate/sandgate/internal/testworld"
)

const e2eImage = "sandgate/executor:dev"

// cluster returns the test cluster's kubeconfig and kubectl, or fails (CI)
// or skips (elsewhere) with the reason.
func cluster(t *testing.T) (kubeconfig, kubectl string) {
	t.Helper()
	kubeconfig, kubectl = os.Getenv("SANDGATE_TEST_KUBECONFIG"), os.Getenv("SANDGATE_TEST_KUBECTL")
	reason := ""
	if _, err := os.Stat(kubeconfig); kubeconfig == "" || err != nil {
		reason = "no test cluster (SANDGATE_TEST_KUBECONFIG): `make k8s-up` starts one"
	} else if _, err := os.Stat(kubectl); kubectl == "" || err != nil {
		reason = "no kubectl (SANDGATE_TEST_KUBECTL): `make k8s-up` builds it"
	}
	if reason != "" {
		if os.Getenv("CI") == "true" {
			t.Fatal(reason)
		}
		t.Skip(reason)
	}
	return kubeconfig, kubectl
}

// run runs a command from the repository root with the kubeconfig set.
func run(t *testing.T, kubeconfig, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "DOCKER_BUILDKIT=0")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s %s:\n%s", name, strings.Join(args, " "), out)
	return string(out)
}

// freePort is a loopback port nothing listens on now: the executor runs on
// the host's network (the test cluster has no kube-proxy and no pod route).
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}

func TestChartServesASession(t *testing.T) {
	kubeconfig, kubectl := cluster(t)
	helm := helmBinary(t) // before the image build, so a missing helm fails fast
	run(t, kubeconfig, "docker", "build", "-q", "--target", "executor", "-t", e2eImage, ".")
	run(t, kubeconfig, "build/k8s/import-images.sh", e2eImage, "debian:bookworm", gateImage, agentImage)

	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	ns := "sandgate-e2e-" + hex.EncodeToString(suffix)
	// The API token is secret material of its own, not derived from the
	// (public) namespace name.
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	token := hex.EncodeToString(secret)
	port, gatePort := freePort(t), freePort(t)
	for gatePort == port {
		gatePort = freePort(t)
	}
	bridge := testworld.PodBridgeAddr(t)
	run(t, kubeconfig, kubectl, "create", "namespace", ns)
	t.Cleanup(func() {
		// Deleting the namespace removes the release's objects and any
		// sandbox pod left behind; do not wait for it.
		_ = exec.Command(kubectl, "--kubeconfig", kubeconfig, "delete", "namespace", ns, "--wait=false").Run()
	})
	run(t, kubeconfig, kubectl, "-n", ns, "create", "secret", "generic", "e2e-api", "--from-literal=token="+token)

	run(t, kubeconfig, helm, "install", "e2e", "deploy/helm/sandgate", "--namespace", ns,
		"--wait", "--timeout", "3m",
		"--set", "image.repository=sandgate/executor", "--set", "image.tag=dev", "--set", "image.pullPolicy=Never",
		"--set", "api.existingSecret=e2e-api",
		"--set", fmt.Sprintf("api.port=%d", port),
		"--set", "hostNetwork=true",
		"--set", "kubernetesAPI.host=127.0.0.1", "--set", "kubernetesAPI.port=16443",
		"--set", "resources.requests.cpu=50m",
		// The in-sandbox agent: streamed output, procs and ports ride it.
		"--set", "sandbox.agentImage="+agentImage,
		// Gates on: sandbox pods reach the executor's gate port on the
		// host through the pod bridge's host address.
		"--set", "gate.enabled=true", "--set", "gate.image="+gateImage,
		"--set", fmt.Sprintf("gate.port=%d", gatePort),
		"--set", fmt.Sprintf("gate.controlplaneURL=http://%s", net.JoinHostPort(bridge, fmt.Sprint(gatePort))))
	t.Cleanup(func() {
		_ = exec.Command(helm, "--kubeconfig", kubeconfig, "uninstall", "e2e", "-n", ns).Run()
	})

	// A transport of its own, whose idle connections the test closes: the
	// executor's restart leaves one behind that no server end closes in time.
	hc := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(hc.CloseIdleConnections)
	c, err := httpapi.NewClient(fmt.Sprintf("http://127.0.0.1:%d", port), token, hc)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	sid := domain.NewID("ses")
	_, err = c.Provision(ctx, sid, session.Request{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Delete(context.WithoutCancel(ctx), sid, false) })
	res, err := c.Exec(ctx, sid, sandbox.ExecRequest{Command: "echo hello from the cluster", Timeout: time.Minute})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode)
	require.Equal(t, "hello from the cluster\n", res.Stdout)
	require.NoError(t, c.Delete(ctx, sid, false))

	// A limited session is gated: its pod's gate sidecar fetched its config
	// from the in-cluster executor (it is ready only then), and the sandbox
	// reaches the gate's proxy, which refuses a host the policy does not
	// admit without dialling it.
	gated := domain.NewID("ses")
	_, err = c.Provision(ctx, gated, session.Request{
		Networking: domain.Networking{Type: domain.NetLimited, AllowedHosts: []string{"api.example.com"}}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Delete(context.WithoutCancel(ctx), gated, false) })
	res, err = c.Exec(ctx, gated, sandbox.ExecRequest{Timeout: time.Minute, Command: `echo "$HTTPS_PROXY"; ` +
		`exec 3<>/dev/tcp/127.0.0.1/15080 && printf 'GET http://denied.example/ HTTP/1.1\r\nHost: denied.example\r\nConnection: close\r\n\r\n' >&3 && timeout 20 head -1 <&3`})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, "%+v", res)
	require.Contains(t, res.Stdout, gatewire.ProxyURL+"\n")
	require.Contains(t, res.Stdout, "HTTP/1.1 403", "the gate answered with its policy")
	// Issue 14's features, in this limited, gated sandbox.
	checkInteractive(ctx, t, c, gated)
	checkProcOutlivesRestart(ctx, t, c, gated, func() {
		// SIGTERM to the executor (its container's pid 1): it shuts down and
		// the kubelet starts it again in the same pod, on the same SQLite
		// volume and secret key.
		run(t, kubeconfig, kubectl, "-n", ns, "exec", "deploy/e2e-sandgate", "-c", "executor", "--", "bash", "-c", "kill 1")
	})
	require.NoError(t, c.Delete(ctx, gated, false))
}

// gateImage is what `make gate-image` builds (and make k8s-up imports);
// agentImage what `make agent-image` builds.
const (
	gateImage  = "sandgate/gate:dev"
	agentImage = "sandgate/agent:dev"
)
