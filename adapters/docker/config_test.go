package docker

import (
	"testing"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/internal/seccomp"
)

func resolved(t *testing.T, mut func(*sandbox.Spec)) sandbox.Spec {
	t.Helper()
	s := sandbox.Spec{SessionID: domain.MustParseSessionID("ses_cfg"), Image: "debian:bookworm"}
	if mut != nil {
		mut(&s)
	}
	s, err := sandbox.ResolveSpec(s)
	require.NoError(t, err)
	return s
}

func TestContainerConfigPlain(t *testing.T) {
	t.Parallel()
	cfg, host := containerConfig(resolved(t, func(s *sandbox.Spec) {
		s.Env = map[string]string{"B": "2", "A": "x y $z"}
	}), 2, map[string]string{"dev.sandgate.test": "1"}, "")
	require.Equal(t, "debian:bookworm", cfg.Image)
	require.Equal(t, "/workspace", cfg.WorkingDir)
	require.Equal(t, []string{"/bin/bash"}, []string(cfg.Entrypoint))
	require.Equal(t, sandbox.KeepAliveArgv("/workspace")[1:], []string(cfg.Cmd))
	require.Equal(t, []string{"A=x y $z", "B=2"}, cfg.Env)
	require.Equal(t, map[string]string{sandbox.LabelSession: "ses_cfg", labelRole: roleSandbox, "dev.sandgate.test": "1"}, cfg.Labels)
	require.Empty(t, cfg.User)
	require.True(t, *host.Init)
	require.Empty(t, string(host.NetworkMode), "unrestricted uses the daemon's default network")
	require.Zero(t, host.NanoCPUs)
	require.Nil(t, host.PidsLimit)
	require.Empty(t, host.CapDrop)
	require.Equal(t, []string{"seccomp=" + seccomp.Profile()}, host.SecurityOpt)
	require.Empty(t, host.Mounts)
}

func TestContainerConfigHardening(t *testing.T) {
	t.Parallel()
	uid := int64(1000)
	spec := resolved(t, func(s *sandbox.Spec) {
		s.Workdir = "/srv/app"
		s.Networking = domain.Networking{Type: domain.NetLimited}
		s.Hardening = sandbox.Hardening{PidsLimit: 64, CPUMillis: 8000, MemoryBytes: 256 << 20,
			EphemeralStorageBytes: 1 << 30, CapDrop: []string{"net_raw"}, ReadOnlyRootfs: true, RunAsUser: &uid}
	})
	_, host := containerConfig(spec, 2, nil, "")
	cfg, _ := containerConfig(spec, 2, nil, "")
	require.Equal(t, "1000", cfg.User)
	require.Equal(t, container.NetworkMode("none"), host.NetworkMode)
	require.Equal(t, int64(2_000_000_000), host.NanoCPUs, "clamped to the daemon's CPUs")
	require.Equal(t, int64(64), *host.PidsLimit)
	require.Equal(t, int64(256<<20), host.Memory)
	require.Equal(t, int64(256<<20), host.MemorySwap)
	require.Equal(t, []string{"NET_RAW"}, []string(host.CapDrop))
	require.Equal(t, []string{"no-new-privileges", "seccomp=" + seccomp.Profile()}, host.SecurityOpt)
	require.True(t, host.ReadonlyRootfs)
	require.Equal(t, []mount.Mount{
		{Type: mount.TypeVolume, Target: "/srv/app"},
		{Type: mount.TypeVolume, Target: "/tmp"},
		{Type: mount.TypeVolume, Target: "/mnt"},
	}, host.Mounts)

	_, host = containerConfig(resolved(t, func(s *sandbox.Spec) { s.Hardening.CPUMillis = 500 }), 2, nil, "")
	require.Equal(t, int64(500_000_000), host.NanoCPUs)
	_, host = containerConfig(resolved(t, func(s *sandbox.Spec) { s.Hardening.CPUMillis = 500 }), 0, nil, "")
	require.Equal(t, int64(500_000_000), host.NanoCPUs, "an unknown CPU count does not clamp")
}

func TestObserve(t *testing.T) {
	t.Parallel()
	mk := func(mode string) container.InspectResponse {
		return container.InspectResponse{
			ContainerJSONBase: &container.ContainerJSONBase{HostConfig: &container.HostConfig{NetworkMode: container.NetworkMode(mode)}},
			Config:            &container.Config{Image: "img", WorkingDir: "/w"},
		}
	}
	require.Equal(t, sandbox.Observed{Image: "img", Workdir: "/w", Net: sandbox.NetShapeNone}, observe(mk("none"), ""))
	require.Equal(t, sandbox.Observed{Image: "img", Workdir: "/w", Net: sandbox.NetShapeOpen}, observe(mk("bridge"), ""))
	require.Equal(t, sandbox.Observed{Image: "img", Workdir: "/w", Net: sandbox.NetShapeOpen}, observe(mk(""), ""))
	require.Equal(t, sandbox.Observed{Image: "img", Workdir: "/w", Net: sandbox.NetShapeOpen, Gated: true, PairedGate: "abc", CurrentGate: "abc"},
		observe(mk("container:abc"), "abc"))
}

// A gVisor sandbox runs under the named runtime, is marked for adoption,
// and has /tmp as a volume (runsc would hide an empty one under a tmpfs of
// its own, out of the archive endpoint's sight) — once, on a read-only
// root too; its pids limit leaves room for the Sentry's host tasks.
func TestContainerConfigGVisor(t *testing.T) {
	t.Parallel()
	gv := func(s *sandbox.Spec) { s.Isolation = sandbox.IsolationGVisor }
	cfg, host := containerConfig(resolved(t, gv), 2, nil, "runsc")
	require.Equal(t, "runsc", host.Runtime)
	require.Equal(t, "gvisor", cfg.Labels[labelIsolation])
	require.Equal(t, []mount.Mount{{Type: mount.TypeVolume, Target: "/tmp"}}, host.Mounts)

	_, host = containerConfig(resolved(t, func(s *sandbox.Spec) {
		gv(s)
		s.Hardening.ReadOnlyRootfs = true
		s.Hardening.PidsLimit = 64
	}), 2, nil, "runsc")
	require.Equal(t, int64(64+2*64), *host.PidsLimit, "room for the Sentry's tasks and two per process")
	require.Equal(t, []mount.Mount{
		{Type: mount.TypeVolume, Target: "/workspace"},
		{Type: mount.TypeVolume, Target: "/tmp"},
		{Type: mount.TypeVolume, Target: "/mnt"},
	}, host.Mounts)

	_, host = containerConfig(resolved(t, nil), 2, nil, "runsc")
	require.Empty(t, host.Runtime, "runc sandboxes take the daemon's default")
	require.Empty(t, host.Mounts)
}
