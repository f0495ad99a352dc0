package sandbox

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/gatewire"
)

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func i64(v int64) *int64 { return &v }

func TestHardeningFromEnvDefaults(t *testing.T) {
	t.Parallel()
	h, err := HardeningFromEnv(envOf(nil))
	require.NoError(t, err)
	require.Equal(t, Hardening{PidsLimit: 512, CPUMillis: 2000, CapDrop: []string{"NET_RAW", "SETUID", "SETGID"}}, h)
}

func TestHardeningFromEnvValues(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env  map[string]string
		want Hardening
	}{
		{map[string]string{EnvPidsLimit: "0", EnvCPUMillis: "0", EnvCapDrop: "none"}, Hardening{}},
		{map[string]string{EnvPidsLimit: "64", EnvCPUMillis: "500", EnvMemoryBytes: "1073741824",
			EnvEphemeralStorageBytes: "2147483648", EnvCapDrop: "cap_net_raw,Kill", EnvReadOnlyRootfs: "true",
			EnvRunAsUser: "1000"},
			Hardening{PidsLimit: 64, CPUMillis: 500, MemoryBytes: 1 << 30, EphemeralStorageBytes: 2 << 30,
				CapDrop: []string{"NET_RAW", "KILL"}, ReadOnlyRootfs: true, RunAsUser: i64(1000)}},
		{map[string]string{EnvCapDrop: "ALL", EnvReadOnlyRootfs: "FALSE", EnvRunAsUser: "0"},
			Hardening{PidsLimit: 512, CPUMillis: 2000, CapDrop: []string{"ALL"}, RunAsUser: i64(0)}},
		{map[string]string{EnvCapDrop: "NONE"}, Hardening{PidsLimit: 512, CPUMillis: 2000}},
		{map[string]string{EnvCapDrop: "net_raw,NET_RAW"}, Hardening{PidsLimit: 512, CPUMillis: 2000, CapDrop: []string{"NET_RAW"}}},
		{map[string]string{EnvRunAsUser: "2147483647"}, Hardening{PidsLimit: 512, CPUMillis: 2000,
			CapDrop: []string{"NET_RAW", "SETUID", "SETGID"}, RunAsUser: i64(2147483647)}},
	} {
		h, err := HardeningFromEnv(envOf(tc.env))
		require.NoError(t, err, "%v", tc.env)
		require.Equal(t, tc.want, h, "%v", tc.env)
	}
}

// Every malformed value is an error that names its variable.
func TestHardeningFromEnvMalformed(t *testing.T) {
	t.Parallel()
	ints := []string{EnvPidsLimit, EnvCPUMillis, EnvMemoryBytes, EnvEphemeralStorageBytes, EnvRunAsUser}
	badInts := []string{"-1", "+1", " 1", "1 ", "1e3", "0x10", "1_000", "1.0", "abc", "١", "99999999999999999999"}
	for _, name := range ints {
		for _, v := range badInts {
			_, err := HardeningFromEnv(envOf(map[string]string{name: v}))
			require.ErrorContains(t, err, name, "%s=%q", name, v)
		}
	}
	for _, tc := range []struct{ name, v string }{
		{EnvRunAsUser, "2147483648"},
		{EnvMemoryBytes, "1024"}, // below Docker's 6 MiB minimum
		{EnvCapDrop, "NET_RAW,"},
		{EnvCapDrop, "BOGUS"},
		{EnvCapDrop, "ALL,NET_RAW"},
		{EnvCapDrop, ","},
		{EnvReadOnlyRootfs, "yes"},
		{EnvReadOnlyRootfs, "1"},
		{EnvReadOnlyRootfs, " true"},
	} {
		_, err := HardeningFromEnv(envOf(map[string]string{tc.name: tc.v}))
		require.Error(t, err, "%s=%q", tc.name, tc.v)
		if tc.name != EnvMemoryBytes {
			require.ErrorContains(t, err, tc.name)
		} else {
			require.ErrorContains(t, err, "memory_bytes")
		}
	}
	_, err := HardeningFromEnv(envOf(map[string]string{EnvCapDrop: strings.Repeat("X", 10000)}))
	require.Less(t, len(err.Error()), 400, "hostile values are clipped in errors")
}

func FuzzHardeningFromEnv(f *testing.F) {
	f.Add("512", "2000", "0", "NET_RAW,SETUID", "true", "1000")
	f.Add("-1", "x", "", "ALL", "maybe", "64250")
	f.Fuzz(func(t *testing.T, pids, cpu, mem, caps, ro, uid string) {
		h, err := HardeningFromEnv(envOf(map[string]string{EnvPidsLimit: pids, EnvCPUMillis: cpu,
			EnvMemoryBytes: mem, EnvCapDrop: caps, EnvReadOnlyRootfs: ro, EnvRunAsUser: uid}))
		if err == nil {
			require.NoError(t, h.Validate(false))
			_ = h.EffectiveCapDrop(true)
		}
	})
}

func TestHardeningValidate(t *testing.T) {
	t.Parallel()
	require.NoError(t, Hardening{}.Validate(true))
	require.NoError(t, Hardening{RunAsUser: i64(gatewire.UID)}.Validate(false), "the gate uid only matters behind a gate")
	for _, tc := range []struct {
		h     Hardening
		gated bool
		want  string
	}{
		{Hardening{PidsLimit: -1}, false, "pids_limit"},
		{Hardening{CPUMillis: -1}, false, "cpu_millis"},
		{Hardening{MemoryBytes: -1}, false, "memory_bytes"},
		{Hardening{MemoryBytes: 1}, false, "6 MiB"},
		{Hardening{EphemeralStorageBytes: -5}, false, "ephemeral_storage_bytes"},
		{Hardening{CapDrop: []string{"FLY"}}, false, "cap_drop"},
		{Hardening{CapDrop: []string{"ALL", "KILL"}}, false, "only entry"},
		{Hardening{RunAsUser: i64(-1)}, false, "run_as_user"},
		{Hardening{RunAsUser: i64(1 << 31)}, false, "run_as_user"},
		{Hardening{RunAsUser: i64(gatewire.UID)}, true, "gate's uid"},
	} {
		require.ErrorContains(t, tc.h.Validate(tc.gated), tc.want, "%+v", tc.h)
	}
}

func TestEffectiveCapDrop(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		caps  []string
		gated bool
		want  []string
	}{
		{nil, false, nil},
		{nil, true, []string{"NET_RAW", "SETUID", "SETGID"}},
		{[]string{"cap_kill"}, false, []string{"KILL"}},
		{[]string{"KILL", "SETUID"}, true, []string{"KILL", "SETUID", "NET_RAW", "SETGID"}},
		{[]string{"all"}, true, []string{"ALL"}},
		{[]string{"ALL"}, false, []string{"ALL"}},
		{[]string{"BOGUS"}, true, []string{"NET_RAW", "SETUID", "SETGID"}},
	} {
		require.Equal(t, tc.want, Hardening{CapDrop: tc.caps}.EffectiveCapDrop(tc.gated), "%v gated=%v", tc.caps, tc.gated)
	}
}
