package docker

import (
	"sort"
	"strconv"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"

	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/internal/seccomp"
)

// Labels beyond the ownership label: the role tells a sandbox from a gate,
// so Reap can remove the sandbox first, and the test label lets test
// cleanups find what a crashed run left.
const (
	labelRole   = "dev.sandgate.role"
	roleSandbox = "sandbox"
	roleGate    = "gate"
	// labelIsolation marks a sandbox made under gVisor, so adoption reads
	// the wall it was made with from the container itself.
	labelIsolation = "dev.sandgate.isolation"
)

// containerConfig builds the create request for a resolved spec. Pure, so
// the mapping of every hardening field is unit-tested without a daemon.
// ncpu is the daemon's CPU count: NanoCPUs above it are refused by Docker,
// so the quota is clamped to it (C-HARD-1). gvisorRuntime is the daemon's
// name for runsc, taken by a gVisor sandbox.
func containerConfig(spec sandbox.Spec, ncpu int, extraLabels map[string]string, gvisorRuntime string) (*container.Config, *container.HostConfig) {
	argv := sandbox.KeepAliveArgv(spec.Workdir)
	labels := map[string]string{sandbox.LabelSession: spec.SessionID.String(), labelRole: roleSandbox}
	for k, v := range extraLabels {
		labels[k] = v
	}
	cfg := &container.Config{
		Image:      spec.Image,
		Entrypoint: argv[:1],
		Cmd:        argv[1:],
		WorkingDir: spec.Workdir,
		Env:        envList(spec.Env),
		Labels:     labels,
	}
	h := spec.Hardening
	if h.RunAsUser != nil {
		cfg.User = strconv.FormatInt(*h.RunAsUser, 10)
	}
	useInit := true // reaps the zombies a tool's background jobs leave (C-PROV-9)
	host := &container.HostConfig{Init: &useInit, ReadonlyRootfs: h.ReadOnlyRootfs}
	if spec.Isolation == sandbox.IsolationGVisor {
		host.Runtime = gvisorRuntime
		labels[labelIsolation] = string(sandbox.IsolationGVisor)
		if !h.ReadOnlyRootfs {
			// runsc mounts a tmpfs of the Sentry's own on an empty /tmp,
			// where the engine's archive endpoint (staged writes, export)
			// cannot see; a mount of the spec's keeps it off.
			host.Mounts = append(host.Mounts, volumeAt("/tmp"))
		}
	}
	if spec.Networking.Limited() && spec.Gate == nil {
		host.NetworkMode = "none"
	}
	if h.CPUMillis > 0 {
		millis := h.CPUMillis
		if max := int64(ncpu) * 1000; ncpu > 0 && millis > max {
			millis = max
		}
		host.NanoCPUs = millis * 1_000_000
	}
	if h.PidsLimit > 0 {
		pids := h.PidsLimit
		if spec.Isolation == sandbox.IsolationGVisor {
			pids = gvisorHostPids(pids)
		}
		host.PidsLimit = &pids
	}
	if h.MemoryBytes > 0 {
		host.Memory = h.MemoryBytes
		host.MemorySwap = h.MemoryBytes // no swap on top: the cap is the cap
	}
	if drop := h.EffectiveCapDrop(spec.Gate != nil); len(drop) > 0 {
		host.CapDrop = drop
		host.SecurityOpt = []string{"no-new-privileges"}
	}
	// Every sandbox: sockets only of the families a firewall governs.
	host.SecurityOpt = append(host.SecurityOpt, "seccomp="+seccomp.Profile())
	if h.ReadOnlyRootfs {
		// Volumes, not tmpfs: the archive endpoint (bulk writes) cannot
		// extract into a tmpfs mount of a container (C-HARD-4).
		for _, p := range sandbox.WritablePaths(spec.Workdir) {
			host.Mounts = append(host.Mounts, volumeAt(p))
		}
	}
	return cfg, host
}

// Under gVisor the engine's pids limit binds on the host tasks of the
// sandbox — the Sentry's threads (about 32 on two CPUs, measured) and, on
// runsc's systrap platform, two per process of the sandbox — never on the
// sandbox's processes, which the Sentry's own cgroups leave unlimited. The
// limit stays, so a fork bomb cannot fill the host's pid space, at room for
// about limit + 16 of the sandbox's processes (docs/DIVERGENCES.md).
const (
	gvisorSentryTasks  = 64
	gvisorTasksPerProc = 2
)

func gvisorHostPids(limit int64) int64 { return gvisorSentryTasks + gvisorTasksPerProc*limit }

// volumeAt is a fresh anonymous volume mounted at target; Reap removes it
// with its container.
func volumeAt(target string) mount.Mount { return mount.Mount{Type: mount.TypeVolume, Target: target} }

// envList renders env as KEY=VALUE in sorted order, so the create request is
// deterministic.
func envList(env map[string]string) []string {
	if len(env) == 0 {
		return nil
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// observe reads back what adoption compares from an inspected sandbox.
func observe(c container.InspectResponse, currentGate string) sandbox.Observed {
	o := sandbox.Observed{CurrentGate: currentGate, Net: sandbox.NetShapeOpen}
	if c.Config != nil {
		o.Image = c.Config.Image
		o.Workdir = c.Config.WorkingDir
		o.Isolation = sandbox.Isolation(c.Config.Labels[labelIsolation])
	}
	if c.HostConfig != nil {
		mode := c.HostConfig.NetworkMode
		switch {
		case mode.IsNone():
			o.Net = sandbox.NetShapeNone
		case mode.IsContainer():
			o.Gated = true
			o.PairedGate = mode.ConnectedContainer()
		}
	}
	return o
}
