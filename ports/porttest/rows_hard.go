package porttest

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/ports"
)

// Capability bit numbers (linux/capability.h).
const (
	capChown     = 0
	capNetRaw    = 13
	capSysChroot = 18
)

// cgroupFile prints the first readable of a cgroup v2 and a v1 file.
func cgroupFile(v2, v1 string) string {
	return fmt.Sprintf(`for f in /sys/fs/cgroup/%s /sys/fs/cgroup/%s; do [ -r "$f" ] && { cat "$f"; exit 0; }; done; echo "no cgroup file" >&2; exit 1`, v2, v1)
}

// hardRows: hardening, observed from inside the sandbox (C-HARD-1..4).
func hardRows() []row {
	return []row{
		{"C-HARD-1/cpu-quota", func(t *testing.T, s *suite) {
			sb := s.provision(t, sandbox.Spec{Hardening: sandbox.Hardening{CPUMillis: 500}})
			quota, period := cpuQuota(t, sb)
			require.Equal(t, period/2, quota, "500 millis is half a CPU")
		}},
		{"C-HARD-2/memory-limit", func(t *testing.T, s *suite) {
			sb := s.provision(t, sandbox.Spec{Hardening: sandbox.Hardening{MemoryBytes: 256 << 20}})
			require.Equal(t, "268435456\n", sh(t, sb, cgroupFile("memory.max", "memory/memory.limit_in_bytes")))
		}},
		{"C-HARD-2/backend-specific-fields-accepted", func(t *testing.T, s *suite) {
			sb := s.provision(t, sandbox.Spec{Hardening: sandbox.Hardening{PidsLimit: 256, EphemeralStorageBytes: 1 << 30}})
			require.Equal(t, "ok\n", sh(t, sb, "echo ok"), "a field the backend ignores must not fail the sandbox")
		}},
		{"C-HARD-3/cap-drop-named", func(t *testing.T, s *suite) {
			sb := s.provision(t, sandbox.Spec{Hardening: sandbox.Hardening{CapDrop: []string{"cap_net_raw", "Sys_Chroot"}}})
			st := procStatus(t, sb)
			bnd := capMask(t, st["CapBnd"])
			require.Zero(t, bnd&(1<<capNetRaw), "NET_RAW still in the bounding set")
			require.Zero(t, bnd&(1<<capSysChroot), "SYS_CHROOT still in the bounding set")
			require.NotZero(t, bnd&(1<<capChown), "a capability not named was dropped too")
			require.Zero(t, capMask(t, st["CapEff"])&(1<<capNetRaw))
			require.Equal(t, "1", st["NoNewPrivs"], "dropping anything sets no-new-privileges")
			res := exec(t, sb, sandbox.ExecRequest{Command: "chroot / true"})
			require.NotEqual(t, 0, res.ExitCode, "chroot works without CAP_SYS_CHROOT")
		}},
		{"C-HARD-3/cap-drop-all", func(t *testing.T, s *suite) {
			sb := s.provision(t, sandbox.Spec{Hardening: sandbox.Hardening{CapDrop: []string{"ALL"}}})
			st := procStatus(t, sb)
			require.Zero(t, capMask(t, st["CapEff"]), "CapEff")
			require.Zero(t, capMask(t, st["CapBnd"]), "CapBnd")
			require.Equal(t, "1", st["NoNewPrivs"])
			res := exec(t, sb, sandbox.ExecRequest{Command: "chown 65534 /workspace"})
			require.NotEqual(t, 0, res.ExitCode, "chown works without CAP_CHOWN")
		}},
		{"C-HARD-4/read-only-root", func(t *testing.T, s *suite) {
			sb := s.provision(t, sandbox.Spec{Hardening: sandbox.Hardening{ReadOnlyRootfs: true}})
			res := exec(t, sb, sandbox.ExecRequest{Command: "LC_ALL=C touch /porttest"})
			require.NotEqual(t, 0, res.ExitCode)
			require.Contains(t, res.Stderr, "Read-only file system")
			requireWritablePaths(t, sb, sandbox.WritablePaths(""))
		}},
		{"C-HARD-4/read-only-root-custom-workdir", func(t *testing.T, s *suite) {
			sb := s.provision(t, sandbox.Spec{Workdir: "/srv/app", Hardening: sandbox.Hardening{ReadOnlyRootfs: true}})
			require.Equal(t, "/srv/app\n", sh(t, sb, "pwd"))
			requireWritablePaths(t, sb, sandbox.WritablePaths("/srv/app"))
		}},
		{"C-HARD-4/run-as-user", func(t *testing.T, s *suite) {
			for _, uid := range []int64{4242, 0} {
				sb := s.provision(t, sandbox.Spec{Image: s.h.NonRootImage, Hardening: sandbox.Hardening{RunAsUser: &uid}})
				require.Equal(t, uid, mustUID(t, sb))
			}
		}},
		{"C-HARD-4/image-user-kept-without-override", func(t *testing.T, s *suite) {
			require.Equal(t, s.h.NonRootUID, mustUID(t, s.nonRoot(t)))
		}},
	}
}

// requireWritablePaths requires every path in dirs to take a shell write, a
// WriteFile, a WriteFiles batch of its own, and all of them one batch
// spanning every dir (bulk writes need volumes, not tmpfs, on a read-only
// root: C-HARD-4).
func requireWritablePaths(t *testing.T, sb ports.Sandbox, dirs []string) {
	t.Helper()
	var span []sandbox.FileWrite
	for _, d := range dirs {
		sh(t, sb, "touch "+q(d+"/by-shell"))
		require.NoError(t, sb.WriteFile(ctx(t), d+"/by-write", []byte("w")), d)
		one := sandbox.FileWrite{Path: d + "/bulk/by-bulk", Data: []byte("b")}
		require.NoError(t, sb.WriteFiles(ctx(t), []sandbox.FileWrite{one}), "a batch inside %s", d)
		require.Equal(t, "b", string(readBack(t, sb, one.Path)))
		span = append(span, sandbox.FileWrite{Path: d + "/span/by-bulk", Data: []byte("s")})
	}
	require.NoError(t, sb.WriteFiles(ctx(t), span), "a batch spanning %v", dirs)
	for _, f := range span {
		require.Equal(t, "s", string(readBack(t, sb, f.Path)))
	}
}

// cpuQuota reads the CFS quota and period (v2 cpu.max or the v1 files).
func cpuQuota(t *testing.T, sb ports.Sandbox) (quota, period int64) {
	t.Helper()
	out := sh(t, sb, `if [ -r /sys/fs/cgroup/cpu.max ]; then cat /sys/fs/cgroup/cpu.max; else
	d=/sys/fs/cgroup/cpu; [ -r $d/cpu.cfs_quota_us ] || d=/sys/fs/cgroup/cpu,cpuacct
	echo "$(cat $d/cpu.cfs_quota_us) $(cat $d/cpu.cfs_period_us)"; fi`)
	f := strings.Fields(out)
	require.Len(t, f, 2, "cpu quota %q", out)
	quota, err := strconv.ParseInt(f[0], 10, 64)
	require.NoError(t, err, "no CPU quota set: %q", out)
	period, err = strconv.ParseInt(f[1], 10, 64)
	require.NoError(t, err)
	return quota, period
}

// procStatus returns /proc/self/status of a shell in the sandbox.
func procStatus(t *testing.T, sb ports.Sandbox) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, line := range strings.Split(sh(t, sb, "cat /proc/self/status"), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok {
			m[k] = strings.TrimSpace(v)
		}
	}
	return m
}

// capMask parses a hex capability set.
func capMask(t *testing.T, hex string) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(hex, 16, 64)
	require.NoError(t, err, "capability mask %q", hex)
	return v
}
