package sandbox

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/gatewire"
)

// Hardening is the containment a provider applies when it creates the
// sandbox. The zero value applies none of it; the platform defaults come from
// HardeningFromEnv. Bound at create: not re-applied to an adopted sandbox.
type Hardening struct {
	// PidsLimit caps live processes (fork-bomb containment). 0 = runtime
	// default. Docker only; Kubernetes ignores it (DIVERGENCES.md).
	PidsLimit int64
	// CPUMillis caps CPU in thousandths of a core (a quota, not a
	// reservation). 0 = unbounded.
	CPUMillis int64
	// MemoryBytes caps memory. 0 = unbounded (an OOM kill mid-task is worse
	// than CPU throttling, so it is opt-in).
	MemoryBytes int64
	// EphemeralStorageBytes caps node-local disk; exceeding it evicts the
	// pod. Kubernetes only; Docker ignores it (DIVERGENCES.md). 0 = unbounded.
	EphemeralStorageBytes int64
	// CapDrop names capabilities to drop without the CAP_ prefix ("NET_RAW"),
	// or the single entry "ALL". A gated sandbox always drops
	// NET_RAW/SETUID/SETGID on top (EffectiveCapDrop).
	CapDrop []string
	// ReadOnlyRootfs mounts the root read-only; the provider mounts writable
	// volumes over WritablePaths.
	ReadOnlyRootfs bool
	// RunAsUser overrides the image's user with a numeric uid; nil keeps the
	// image's USER. A gated sandbox may not run as gatewire.UID.
	RunAsUser *int64
}

// gatedCapDrop are always dropped in a gated sandbox: they are what would let
// a tool forge the gate's egress identity (raw packets, becoming the gate uid).
var gatedCapDrop = []string{"NET_RAW", "SETUID", "SETGID"}

// knownCaps are the Linux capability names (without CAP_) a drop may name.
var knownCaps = map[string]bool{
	"AUDIT_CONTROL": true, "AUDIT_READ": true, "AUDIT_WRITE": true, "BLOCK_SUSPEND": true,
	"BPF": true, "CHECKPOINT_RESTORE": true, "CHOWN": true, "DAC_OVERRIDE": true,
	"DAC_READ_SEARCH": true, "FOWNER": true, "FSETID": true, "IPC_LOCK": true,
	"IPC_OWNER": true, "KILL": true, "LEASE": true, "LINUX_IMMUTABLE": true,
	"MAC_ADMIN": true, "MAC_OVERRIDE": true, "MKNOD": true, "NET_ADMIN": true,
	"NET_BIND_SERVICE": true, "NET_BROADCAST": true, "NET_RAW": true, "PERFMON": true,
	"SETFCAP": true, "SETGID": true, "SETPCAP": true, "SETUID": true,
	"SYS_ADMIN": true, "SYS_BOOT": true, "SYS_CHROOT": true, "SYS_MODULE": true,
	"SYS_NICE": true, "SYS_PACCT": true, "SYS_PTRACE": true, "SYS_RAWIO": true,
	"SYS_RESOURCE": true, "SYS_TIME": true, "SYS_TTY_CONFIG": true, "SYSLOG": true,
	"WAKE_ALARM": true,
}

// maxUID is the largest uid either backend accepts (2^31-1).
const maxUID = 1<<31 - 1

// Validate checks every field; gated adds the one rule that only matters
// behind a gate (RunAsUser must not be the gate uid). Errors name the field.
func (h Hardening) Validate(gated bool) error {
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"hardening.pids_limit", h.PidsLimit},
		{"hardening.cpu_millis", h.CPUMillis},
		{"hardening.memory_bytes", h.MemoryBytes},
		{"hardening.ephemeral_storage_bytes", h.EphemeralStorageBytes},
	} {
		if f.v < 0 {
			return fmt.Errorf("%s: %d is negative", f.name, f.v)
		}
	}
	if h.MemoryBytes > 0 && h.MemoryBytes < 6<<20 {
		// Docker refuses less than 6 MiB; refuse it here so both backends agree.
		return fmt.Errorf("hardening.memory_bytes: %d is below the 6 MiB minimum", h.MemoryBytes)
	}
	if _, err := normalizeCaps(h.CapDrop); err != nil {
		return fmt.Errorf("hardening.cap_drop: %w", err)
	}
	if h.RunAsUser != nil {
		u := *h.RunAsUser
		if u < 0 || u > maxUID {
			return fmt.Errorf("hardening.run_as_user: %d is outside 0..%d", u, maxUID)
		}
		if gated && u == gatewire.UID {
			return fmt.Errorf("hardening.run_as_user: %d is the gate's uid; a sandbox running as it would bypass the gate's firewall", u)
		}
	}
	return nil
}

// normalizeCaps upper-cases names, strips an optional CAP_ prefix, refuses
// unknown names and an "ALL" mixed with others, and de-duplicates in order.
func normalizeCaps(caps []string) ([]string, error) {
	out := make([]string, 0, len(caps))
	for _, c := range caps {
		n := strings.ToUpper(strings.TrimSpace(c))
		n = strings.TrimPrefix(n, "CAP_")
		switch {
		case n == "ALL":
			if len(caps) != 1 {
				return nil, fmt.Errorf("%q must be the only entry", "ALL")
			}
		case !knownCaps[n]:
			return nil, fmt.Errorf("unknown capability %q", domain.Clip(c))
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out, nil
}

// EffectiveCapDrop is the drop list a backend applies: CapDrop normalized,
// plus NET_RAW, SETUID and SETGID when gated; "ALL" absorbs everything. It
// assumes Validate passed (unknown names are dropped from the result).
func (h Hardening) EffectiveCapDrop(gated bool) []string {
	caps, err := normalizeCaps(h.CapDrop)
	if err != nil {
		caps = nil
	}
	if slices.Contains(caps, "ALL") {
		return []string{"ALL"}
	}
	if gated {
		for _, c := range gatedCapDrop {
			if !slices.Contains(caps, c) {
				caps = append(caps, c)
			}
		}
	}
	if len(caps) == 0 {
		return nil
	}
	return caps
}

// Hardening environment variables (CONTRACT §0).
const (
	EnvPidsLimit             = "SANDBOX_PIDS_LIMIT"
	EnvCPUMillis             = "SANDBOX_CPU_MILLIS"
	EnvMemoryBytes           = "SANDBOX_MEMORY_BYTES"
	EnvEphemeralStorageBytes = "SANDBOX_EPHEMERAL_STORAGE_BYTES"
	EnvCapDrop               = "SANDBOX_CAP_DROP"
	EnvReadOnlyRootfs        = "SANDBOX_READONLY_ROOTFS"
	EnvRunAsUser             = "SANDBOX_RUN_AS_USER"
)

// HardeningFromEnv resolves the platform's hardening defaults from the
// SANDBOX_* variables read through getenv (os.Getenv in the binaries). Unset
// or empty variables take the defaults: pids 512, CPU 2000 millis, memory and
// ephemeral storage off, cap drop NET_RAW,SETUID,SETGID, writable root, the
// image's user. A malformed value is an error naming the variable.
func HardeningFromEnv(getenv func(string) string) (Hardening, error) {
	h := Hardening{PidsLimit: 512, CPUMillis: 2000, CapDrop: slices.Clone(gatedCapDrop)}
	for _, f := range []struct {
		name string
		dst  *int64
		max  int64
	}{
		{EnvPidsLimit, &h.PidsLimit, 1<<63 - 1},
		{EnvCPUMillis, &h.CPUMillis, 1<<63 - 1},
		{EnvMemoryBytes, &h.MemoryBytes, 1<<63 - 1},
		{EnvEphemeralStorageBytes, &h.EphemeralStorageBytes, 1<<63 - 1},
	} {
		if v := getenv(f.name); v != "" {
			n, err := parsePlainUint(v, f.max)
			if err != nil {
				return Hardening{}, fmt.Errorf("%s=%q: %w", f.name, domain.Clip(v), err)
			}
			*f.dst = n
		}
	}
	switch v := getenv(EnvCapDrop); {
	case v == "":
	case strings.EqualFold(strings.TrimSpace(v), "none"):
		h.CapDrop = nil
	default:
		parts := strings.Split(v, ",")
		caps, err := normalizeCaps(parts)
		if err != nil {
			return Hardening{}, fmt.Errorf("%s=%q: %w", EnvCapDrop, domain.Clip(v), err)
		}
		h.CapDrop = caps
	}
	if v := getenv(EnvReadOnlyRootfs); v != "" {
		switch strings.ToLower(v) {
		case "true":
			h.ReadOnlyRootfs = true
		case "false":
		default:
			return Hardening{}, fmt.Errorf("%s=%q: want true or false", EnvReadOnlyRootfs, domain.Clip(v))
		}
	}
	if v := getenv(EnvRunAsUser); v != "" {
		n, err := parsePlainUint(v, maxUID)
		if err != nil {
			return Hardening{}, fmt.Errorf("%s=%q: %w", EnvRunAsUser, domain.Clip(v), err)
		}
		h.RunAsUser = &n
	}
	if err := h.Validate(false); err != nil {
		return Hardening{}, fmt.Errorf("SANDBOX_* hardening: %w", err)
	}
	return h, nil
}

// parsePlainUint accepts only plain decimal digits (no sign, no spaces, no
// 0x, no underscores) up to max: a hardening value that does not say exactly
// one number is a mistake to report, not to guess at.
func parsePlainUint(s string, max int64) (int64, error) {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("want a non-negative decimal integer")
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n > max {
		return 0, fmt.Errorf("out of range 0..%d", max)
	}
	return n, nil
}
