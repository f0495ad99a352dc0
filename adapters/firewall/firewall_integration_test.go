//go:build integration

package firewall

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"
	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/adapters/docker/dockertest"
)

// runtimeImage is the Dockerfile stage gate-runtime (`make images` builds it;
// by hand: DOCKER_BUILDKIT=0 docker build --target gate-runtime -t
// sandgate/gate-runtime:dev .). originImage serves the test's own origin.
const (
	runtimeImage = "sandgate/gate-runtime:dev"
	originImage  = "debian:bookworm"
	gateUID      = "64250"
	helper       = "/usr/local/bin/fwcheck"
)

// asGate runs a command as the gate's uid, as the gate does after dropping
// its privileges.
var asGate = []string{"setpriv", "--reuid=" + gateUID, "--regid=" + gateUID, "--clear-groups"}

// TestFirewallInContainer installs the firewall with the real iptables of the
// gate-runtime image inside a container holding NET_ADMIN, on a user-defined
// network with an origin container the test started, and checks the listing
// and what it lets through, before and after a foreign change.
func TestFirewallInContainer(t *testing.T) {
	h := newHarness(t, true)
	gate := h.gate(true)

	// Before the firewall, root reaches the origin: the refusals below are
	// the firewall's doing, not the network's.
	// Over IPv4 only: the IPv6 subtest needs a neighbour cache without the
	// origin in it.
	h.ok(gate, "connected "+h.originIP+":8080", helper, "dial", h.originIP+":8080")

	out := h.ok(gate, "", helper, "install", gateUID)
	require.Contains(t, out, "ipv6 -N SANDGATE-EGRESS")
	h.requireListing(gate)

	t.Run("root is refused, the gate uid gets out", func(t *testing.T) {
		h := h.on(t)
		h.refused(gate, "connection refused", helper, "dial", h.originIP+":8080")
		h.ok(gate, "connected "+h.originIP+":8080", append(asGate, helper, "dial", h.originIP+":8080")...)
	})
	t.Run("over IPv6 too, neighbour discovery included", func(t *testing.T) {
		h := h.on(t)
		// The gate container has sent nothing over IPv6 before the firewall,
		// so the gate uid's dial needs the kernel's neighbour solicitation.
		addr := "[" + h.originIP6 + "]:8080"
		h.ok(gate, "connected "+addr, append(asGate, helper, "dial", addr)...)
		h.refused(gate, "connection refused", helper, "dial", addr)
	})
	t.Run("loopback services stay reachable", func(t *testing.T) {
		h := h.on(t)
		h.ok(gate, "loopback 127.0.0.1:", helper, "loopback", "127.0.0.1")
		h.ok(gate, "loopback [::1]:", helper, "loopback", "::1")
	})
	t.Run("the embedded resolver only for the gate uid", func(t *testing.T) {
		h := h.on(t)
		h.refused(gate, "write: operation not permitted", helper, "resolve", "udp", "127.0.0.11:53", "origin")
		h.refused(gate, "connection refused", helper, "resolve", "tcp", "127.0.0.11:53", "origin")
		for _, transport := range []string{"udp", "tcp"} {
			out := h.ok(gate, "resolved [", append(asGate, helper, "resolve", transport, "127.0.0.11:53", "origin")...)
			require.ElementsMatch(t, []string{h.originIP, h.originIP6}, strings.Fields(strings.Trim(strings.TrimPrefix(out, "resolved "), "[]\n")))
		}
	})
	t.Run("a re-run reconciles a foreign rule, a duplicate jump and a changed chain", func(t *testing.T) {
		h := h.on(t)
		for _, ipt := range []string{"iptables", "ip6tables"} {
			h.ok(gate, "", ipt, "-I", "OUTPUT", "1", "-j", "ACCEPT")
			h.ok(gate, "", ipt, "-A", "OUTPUT", "-j", Chain)
			h.ok(gate, "", ipt, "-D", Chain, "2")
		}
		// The foreign accept above the jump really opens the way ...
		h.ok(gate, "connected", helper, "dial", h.originIP+":8080")
		h.ok(gate, "", helper, "install", gateUID)
		h.requireListing(gate, "-A OUTPUT -j ACCEPT")
		// ... and below it, it no longer does.
		h.refused(gate, "connection refused", helper, "dial", h.originIP+":8080")
	})
}

// TestFirewallIPv6Off checks that with IPv6 off in the namespace only the
// IPv4 rules are installed.
func TestFirewallIPv6Off(t *testing.T) {
	h := newHarness(t, false)
	gate := h.gate(false)
	out := h.ok(gate, "ipv6 off", helper, "install", gateUID)
	require.NotContains(t, out, "ipv6 -")
	require.Equal(t, strings.Join(wantV4, "\n")+"\n", h.ok(gate, "", "iptables", "-S", Chain))
	require.Equal(t, "-P INPUT ACCEPT\n-P FORWARD ACCEPT\n-P OUTPUT ACCEPT\n", h.ok(gate, "", "ip6tables", "-S"))
}

// on returns the harness reporting to t (a subtest's), so that a failure
// stops the subtest, not its parent.
func (h *harness) on(t *testing.T) *harness {
	c := *h
	c.t = t
	return &c
}

type harness struct {
	t         *testing.T
	ctx       context.Context
	cli       *client.Client
	labels    map[string]string
	net       string
	bin       string
	originIP  string
	originIP6 string // "" on a network without IPv6
}

// newHarness builds the helper and starts the origin on a network of the
// test's own, with IPv6 (a ULA /64 derived from the test's label) or without.
func newHarness(t *testing.T, ipv6 bool) *harness {
	t.Helper()
	cli := dockertest.Client(t)
	dockertest.RequireImage(t, cli, runtimeImage)
	dockertest.RequireImage(t, cli, originImage)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	t.Cleanup(cancel)
	h := &harness{t: t, ctx: ctx, cli: cli, labels: dockertest.Labels(t, cli), bin: buildHelper(t)}
	// By name: that is how inspect keys a container's networks.
	h.net = "sandgate-fw-" + h.labels[dockertest.LabelTest]
	opts := network.CreateOptions{Labels: h.labels}
	if ipv6 {
		sum := fnv.New32a()
		_, _ = sum.Write([]byte(h.net))
		v := sum.Sum32()
		opts.EnableIPv6 = &ipv6
		opts.IPAM = &network.IPAM{Config: []network.IPAMConfig{{Subnet: fmt.Sprintf("fd5a:9d00:%x:%x::/64", v>>16, v&0xffff)}}}
	}
	_, err := cli.NetworkCreate(ctx, h.net, opts)
	require.NoError(t, err)
	h.startOrigin()
	return h
}

// buildHelper compiles internal/fwcheck statically for the containers.
func buildHelper(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "fwcheck")
	cmd := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "./internal/fwcheck")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return bin
}

// startOrigin runs the helper's TCP server as the container "origin" and
// waits for it to say it listens.
func (h *harness) startOrigin() {
	id := h.create(originImage, "origin", []string{helper, "serve", ":8080"}, &container.HostConfig{NetworkMode: container.NetworkMode(h.net)})
	logs, err := h.cli.ContainerLogs(h.ctx, id, container.LogsOptions{ShowStdout: true, Follow: true})
	require.NoError(h.t, err)
	defer func() { _ = logs.Close() }()
	pr, pw := io.Pipe()
	go func() { _, err := stdcopy.StdCopy(pw, io.Discard, logs); _ = pw.CloseWithError(err) }()
	line, err := bufio.NewReader(pr).ReadString('\n')
	require.NoError(h.t, err)
	require.Equal(h.t, "listening [::]:8080\n", line)
	info, err := h.cli.ContainerInspect(h.ctx, id)
	require.NoError(h.t, err)
	ep := info.NetworkSettings.Networks[h.net]
	require.NotNil(h.t, ep, "origin not on network %s", h.net)
	h.originIP, h.originIP6 = ep.IPAddress, ep.GlobalIPv6Address
	require.NotEmpty(h.t, h.originIP)
}

// gate starts a container like the gate's: root with NET_ADMIN, on the
// test's network, IPv6 on or off in its namespace.
func (h *harness) gate(ipv6 bool) string {
	disable := "1"
	if ipv6 {
		disable = "0"
	}
	return h.create(runtimeImage, "gate", []string{"sleep", "infinity"}, &container.HostConfig{
		NetworkMode: container.NetworkMode(h.net),
		CapAdd:      []string{"NET_ADMIN"},
		Sysctls:     map[string]string{"net.ipv6.conf.all.disable_ipv6": disable},
	})
}

// create makes a labelled container on the test's network, copies the
// helper in and starts it.
func (h *harness) create(image, alias string, cmd []string, hc *container.HostConfig) string {
	h.t.Helper()
	created, err := h.cli.ContainerCreate(h.ctx,
		&container.Config{Image: image, User: "root", Cmd: cmd, Labels: h.labels},
		hc,
		&network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{h.net: {Aliases: []string{alias}}}},
		nil, "")
	require.NoError(h.t, err)
	require.NoError(h.t, h.cli.CopyToContainer(h.ctx, created.ID, "/", h.helperTar(), container.CopyToContainerOptions{}))
	require.NoError(h.t, h.cli.ContainerStart(h.ctx, created.ID, container.StartOptions{}))
	return created.ID
}

func (h *harness) helperTar() *bytes.Buffer {
	body, err := os.ReadFile(h.bin)
	require.NoError(h.t, err)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	require.NoError(h.t, tw.WriteHeader(&tar.Header{Name: strings.TrimPrefix(helper, "/"), Mode: 0o755, Size: int64(len(body))}))
	_, err = tw.Write(body)
	require.NoError(h.t, err)
	require.NoError(h.t, tw.Close())
	return &buf
}

// requireListing checks both families' chain and OUTPUT, exactly: the jump
// first, then the foreign rules given.
func (h *harness) requireListing(id string, foreign ...string) {
	h.t.Helper()
	output := strings.Join(append([]string{"-P OUTPUT ACCEPT", "-A OUTPUT -j SANDGATE-EGRESS"}, foreign...), "\n") + "\n"
	for ipt, want := range map[string][]string{"iptables": wantV4, "ip6tables": wantV6} {
		require.Equal(h.t, strings.Join(want, "\n")+"\n", h.ok(id, "", ipt, "-S", Chain), ipt)
		require.Equal(h.t, "-A OUTPUT -j SANDGATE-EGRESS\n", h.ok(id, "", ipt, "-S", "OUTPUT", "1"), ipt)
		require.Equal(h.t, output, h.ok(id, "", ipt, "-S", "OUTPUT"), ipt)
	}
}

// ok runs cmd and requires exit 0 and stdout containing want.
func (h *harness) ok(id, want string, cmd ...string) string {
	h.t.Helper()
	stdout, stderr, code := h.exec(id, cmd)
	require.Equal(h.t, 0, code, "%q: stdout %q, stderr %q", cmd, stdout, stderr)
	require.Contains(h.t, stdout, want, "%q", cmd)
	return stdout
}

// refused runs cmd and requires exit 1 with stderr containing why.
func (h *harness) refused(id, why string, cmd ...string) {
	h.t.Helper()
	stdout, stderr, code := h.exec(id, cmd)
	require.Equal(h.t, 1, code, "%q: stdout %q, stderr %q", cmd, stdout, stderr)
	require.Contains(h.t, stderr, why, "%q", cmd)
}

func (h *harness) exec(id string, cmd []string) (string, string, int) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(h.ctx, 30*time.Second)
	defer cancel()
	ex, err := h.cli.ContainerExecCreate(ctx, id, container.ExecOptions{Cmd: cmd, AttachStdout: true, AttachStderr: true})
	require.NoError(h.t, err)
	att, err := h.cli.ContainerExecAttach(ctx, ex.ID, container.ExecAttachOptions{})
	require.NoError(h.t, err)
	defer att.Close()
	var stdout, stderr bytes.Buffer
	_, err = stdcopy.StdCopy(&stdout, &stderr, att.Reader)
	require.NoError(h.t, err)
	// The stream ends as the process exits; the engine may record the exit
	// code a moment later.
	for {
		st, err := h.cli.ContainerExecInspect(ctx, ex.ID)
		require.NoError(h.t, err)
		if !st.Running {
			return stdout.String(), stderr.String(), st.ExitCode
		}
		select {
		case <-ctx.Done():
			h.t.Fatalf("exec %q still running: %v", cmd, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}
