package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/sandgate/sandgate/core/gatewire"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/ports"
)

// gateHealthArgv is the gate's own readiness check: it exits 0 only once the
// gate has installed and verified its firewall, dropped privileges, and
// taken its first config (B-3).
var gateHealthArgv = []string{"gate", "-healthcheck"}

// gateMemory caps the gate container: the proxy holds at most a few
// substituted 10 MiB bodies and its tunnels' buffers (docs/PERFORMANCE.md: under
// 64 MiB with 50 tunnels open).
const gateMemory = 512 << 20

// gateConfig builds the gate container's create request (C-GATE-1). It holds
// NET_ADMIN for its firewall and SETUID/SETGID/CHOWN to drop to its uid,
// nothing else; its root is read-only with /run on tmpfs (the iptables lock
// and the CA file live there).
func gateConfig(spec sandbox.Spec, token string, opts Options) (*container.Config, *container.HostConfig) {
	labels := map[string]string{sandbox.LabelSession: spec.SessionID.String(), labelRole: roleGate}
	for k, v := range opts.Labels {
		labels[k] = v
	}
	cfg := &container.Config{
		Image:  spec.Gate.Image,
		Env:    spec.Gate.Env(spec.SessionID, token).Environ(),
		Labels: labels,
		// Operators see the gate's health in `docker ps`; the provider does
		// not wait for it (its first check runs only after an interval).
		Healthcheck: &container.HealthConfig{Test: append([]string{"CMD"}, gateHealthArgv...),
			Interval: 15 * time.Second, Timeout: 5 * time.Second, Retries: 3},
		User: "0",
	}
	useInit := true
	pids := int64(256)
	host := &container.HostConfig{
		Init:           &useInit,
		NetworkMode:    container.NetworkMode(opts.GateNetwork),
		CapDrop:        []string{"ALL"},
		CapAdd:         []string{"NET_ADMIN", "SETUID", "SETGID", "CHOWN"},
		SecurityOpt:    []string{"no-new-privileges"},
		ReadonlyRootfs: true,
		Tmpfs:          map[string]string{"/run": "rw,nosuid,nodev,mode=0755,size=1m"},
		// The gate serves one session; bounded so that a sandbox driving
		// it out of memory takes down only its own gate (which fails
		// closed), never the host.
		Resources: container.Resources{PidsLimit: &pids, Memory: gateMemory, MemorySwap: gateMemory},
	}
	return cfg, host
}

// gatedSandboxConfig turns an ungated create request into the gated one:
// the sandbox joins the gate's network namespace, gets the proxy and CA
// variables, and a volume for the CA files (a volume, so the archive PUT
// that installs them works on a read-only root too).
func gatedSandboxConfig(cfg *container.Config, host *container.HostConfig, gateID string, env map[string]string) {
	merged := make(map[string]string, len(env)+12)
	for k, v := range env {
		merged[k] = v
	}
	for k, v := range sandbox.GateSandboxEnv() {
		merged[k] = v
	}
	cfg.Env = envList(merged)
	host.NetworkMode = container.NetworkMode("container:" + gateID)
	host.Mounts = append(host.Mounts, volumeAt(gatewire.SandboxCADir))
}

// createGated creates the gate, persists its token, waits for it to be
// ready and then creates the sandbox in its namespace with its CA trusted
// (C-GATE-1, C-GATE-2, B-1). errNameTaken when another provisioner holds
// the gate's name: the gate name is the session's create lock.
func (p *Provider) createGated(ctx context.Context, spec sandbox.Spec, name string) (ports.Sandbox, error) {
	ncpu, err := p.daemonCPUs(ctx)
	if err != nil {
		return nil, fmt.Errorf("provision %s: %w", spec.SessionID, err)
	}
	gateName := GateName(spec.SessionID.String())
	token := p.opts.Tokens.Generate()
	gcfg, ghost := gateConfig(spec, token, p.opts)
	g, err := p.eng.ContainerCreate(ctx, gcfg, ghost, nil, nil, gateName)
	if cerrdefs.IsConflict(err) {
		return nil, p.orphanGate(ctx, spec, gateName)
	}
	if err != nil {
		return nil, translate(err, "create "+gateName)
	}
	sb, err := p.pairNew(ctx, spec, name, g.ID, token, ncpu)
	if err != nil {
		p.removeQuietly(g.ID)
		return nil, err
	}
	return sb, nil
}

// pairNew runs the rest of a gated create once this call owns the gate
// container gateID: persist the token (only now, C-GATE-2), start the gate,
// wait for it, and create the sandbox. The caller removes the gate on error.
func (p *Provider) pairNew(ctx context.Context, spec sandbox.Spec, name, gateID, token string, ncpu int) (ports.Sandbox, error) {
	sid := spec.SessionID
	if err := p.opts.Tokens.Persist(ctx, sid, token); err != nil {
		return nil, fmt.Errorf("provision %s: persist gate token: %w", sid, err)
	}
	if err := p.startGate(ctx, gateID); err != nil {
		return nil, fmt.Errorf("provision %s: %w", sid, err)
	}
	cfg, host := containerConfig(spec, ncpu, p.opts.Labels, p.opts.GVisorRuntime)
	gatedSandboxConfig(cfg, host, gateID, spec.Env)
	id, err := p.createSandbox(ctx, spec, name, cfg, host)
	if err != nil {
		return nil, err
	}
	if err := p.trustGate(ctx, id, gateID); err != nil {
		p.removeQuietly(id)
		return nil, fmt.Errorf("provision %s: %w", sid, err)
	}
	if err := p.eng.ContainerStart(ctx, id, container.StartOptions{}); err != nil {
		p.removeQuietly(id)
		return nil, translate(err, "start "+name)
	}
	return p.handle(id, spec, gateID, mountsAgent(host)), nil
}

// orphanGate handles a gate name that is taken. A concurrent provisioner's
// fresh gate is a lost race (errNameTaken: adopt its sandbox once it shows).
// A gate older than raceWait whose sandbox never appeared is what a crashed
// create left: it is removed, and the caller's loop creates afresh.
func (p *Provider) orphanGate(ctx context.Context, spec sandbox.Spec, gateName string) error {
	g, err := p.eng.ContainerInspect(ctx, gateName)
	if cerrdefs.IsNotFound(err) {
		return errNameTaken
	}
	if err != nil {
		return translate(err, "inspect "+gateName)
	}
	if err := checkOwned(g, spec.SessionID.String()); err != nil {
		return err
	}
	created, err := time.Parse(time.RFC3339Nano, g.Created)
	if err == nil && time.Since(created) > raceWait {
		p.opts.Logger.Info("removing a gate whose sandbox was never created", "session", spec.SessionID.String())
		if err := p.remove(ctx, g.ID); err != nil {
			return err
		}
	}
	return errNameTaken
}

// startGate starts the gate and waits until its healthcheck passes, bounded
// by GateReadyTimeout. A gate that exits or never gets ready is an error
// carrying its last log lines (the gate never logs a secret).
func (p *Provider) startGate(ctx context.Context, gateID string) error {
	if err := p.eng.ContainerStart(ctx, gateID, container.StartOptions{}); err != nil {
		return translate(err, "start gate")
	}
	wait, cancel := context.WithTimeout(ctx, p.opts.GateReadyTimeout)
	defer cancel()
	probe := &handle{p: p, id: gateID, workdir: "/"}
	var last error
	for delay := 20 * time.Millisecond; ; delay = min(2*delay, 250*time.Millisecond) {
		code, _, err := probe.runScript(wait, gateHealthArgv, nil, nil)
		switch {
		case err == nil && code == 0:
			return nil
		case errors.Is(err, sandbox.ErrNotFound):
			return fmt.Errorf("gate exited before it became ready: %s", p.gateLogs(gateID))
		case err != nil:
			last = err
		default:
			last = fmt.Errorf("healthcheck exit %d", code)
		}
		select {
		case <-wait.Done():
			if ctx.Err() != nil {
				return fmt.Errorf("waiting for the gate: %w", ctx.Err())
			}
			return fmt.Errorf("gate not ready within %s (%w): %s", p.opts.GateReadyTimeout, last, p.gateLogs(gateID))
		case <-time.After(delay):
		}
	}
}

// gateLogs returns the gate's last log lines for an error message.
func (p *Provider) gateLogs(gateID string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rc, err := p.eng.ContainerLogs(ctx, gateID, container.LogsOptions{ShowStdout: true, ShowStderr: true, Tail: "15"})
	if err != nil {
		return "(its logs cannot be read: " + err.Error() + ")"
	}
	defer func() { _ = rc.Close() }()
	w := sandbox.NewCapture(8 << 10)
	_, _ = stdcopy.StdCopy(w, w, rc)
	if text := strings.TrimSpace(w.String()); text != "" {
		return "gate log: " + text
	}
	return "(no log output)"
}

// trustGate installs the gate's CA into the sandbox container sandboxID
// (created, or running): the CA alone and the image's system bundle with
// the CA appended (B-1), both under SandboxCADir.
func (p *Provider) trustGate(ctx context.Context, sandboxID, gateID string) error {
	ca, err := p.gateCA(ctx, gateID)
	if err != nil {
		return fmt.Errorf("read the gate's CA certificate: %w", err)
	}
	system, err := p.readFile(ctx, sandboxID, gatewire.SystemCABundle, 16<<20)
	if err != nil && !errors.Is(err, sandbox.ErrFileNotExist) {
		return fmt.Errorf("read the image's CA bundle: %w", err)
	}
	var archive bytes.Buffer
	tw := tar.NewWriter(&archive)
	for _, f := range []struct {
		path string
		data []byte
	}{{gatewire.SandboxCACert, ca}, {gatewire.SandboxCABundle, sandbox.CABundle(system, ca)}} {
		hdr := &tar.Header{Name: path.Base(f.path), Mode: 0o644, Size: int64(len(f.data)), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if _, err := tw.Write(f.data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := p.eng.CopyToContainer(ctx, sandboxID, gatewire.SandboxCADir, &archive, container.CopyToContainerOptions{}); err != nil {
		return translate(err, "install the gate's CA")
	}
	return nil
}

// gateCA reads the CA certificate the gate wrote. Through an exec, not the
// archive endpoint: the file lives on the gate's /run tmpfs, which only the
// container's own mount namespace sees.
func (p *Provider) gateCA(ctx context.Context, gateID string) ([]byte, error) {
	out := sandbox.NewCapture(64 << 10)
	probe := &handle{p: p, id: gateID, workdir: "/"}
	code, stderr, err := probe.runScript(ctx, []string{"cat", gatewire.CAFile}, nil, out)
	switch {
	case err != nil:
		return nil, err
	case code != 0:
		return nil, fmt.Errorf("cat %s: exit %d: %s", gatewire.CAFile, code, strings.TrimSpace(stderr))
	case out.Truncated() || len(out.Bytes()) == 0:
		return nil, fmt.Errorf("%s: empty or over 64 KiB", gatewire.CAFile)
	}
	return out.Bytes(), nil
}

// readFile reads one regular file of at most limit bytes out of a container
// (created, running or stopped) through the archive endpoint, following at
// most maxLinks symbolic links. sandbox.ErrFileNotExist when it is not there.
func (p *Provider) readFile(ctx context.Context, id, file string, limit int64) ([]byte, error) {
	return p.readFileLinks(ctx, id, file, limit, maxLinks)
}

// maxLinks bounds the links readFile follows, as the kernel's ELOOP does.
const maxLinks = 8

func (p *Provider) readFileLinks(ctx context.Context, id, file string, limit int64, links int) ([]byte, error) {
	rc, _, err := p.eng.CopyFromContainer(ctx, id, file)
	if cerrdefs.IsNotFound(err) {
		return nil, fmt.Errorf("%s: %w", file, sandbox.ErrFileNotExist)
	}
	if err != nil {
		return nil, translate(err, "read "+file)
	}
	defer func() { _ = rc.Close() }()
	tr := tar.NewReader(rc)
	hdr, err := tr.Next()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, sandbox.ErrFileNotExist)
	}
	switch {
	case hdr.Typeflag == tar.TypeSymlink:
		// Debian's bundle is a file, but an image may link it: follow the
		// link inside the container.
		target := hdr.Linkname
		if !path.IsAbs(target) {
			target = path.Join(path.Dir(file), target)
		}
		if links == 0 {
			return nil, fmt.Errorf("%s: too many levels of symbolic links", file)
		}
		return p.readFileLinks(ctx, id, target, limit, links-1)
	case hdr.Typeflag != tar.TypeReg:
		return nil, fmt.Errorf("%s: %w", file, sandbox.ErrNotRegularFile)
	case hdr.Size > limit:
		return nil, fmt.Errorf("%s: %d bytes: %w", file, hdr.Size, sandbox.ErrFileTooLarge)
	}
	return io.ReadAll(tr)
}
