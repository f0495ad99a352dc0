package sandbox

import (
	"fmt"
	"net/url"
	"path"
	"strings"

	"github.com/sandgate/sandgate/core/domain"
)

// DefaultWorkdir is where commands run when Spec.Workdir is empty. It is
// resolved before any adoption comparison (CONTRACT §0).
const DefaultWorkdir = "/workspace"

// LabelSession is the ownership label carried by every container, pod and
// gate, with the session id verbatim as its value (CONTRACT §0): the part of
// a backend that creates a thing and the part that finds it again use this
// one name.
const LabelSession = "dev.sandgate.session"

// Spec describes the sandbox a session wants. SessionID is its whole identity:
// both backends derive the container or pod name from it, so any executor can
// find a session's sandbox again from the session alone.
type Spec struct {
	// SessionID identifies the session; Provision refuses a zero id.
	SessionID domain.ID
	// Image is what the sandbox is created from; Provision refuses an empty
	// one. Adoption compares it verbatim.
	Image string
	// Workdir is where commands run. Empty means DefaultWorkdir, resolved
	// before the adoption comparison.
	Workdir string
	// Networking is the egress policy. With a gate the gate enforces it; without
	// one the backend applies its own fail-closed containment, which is what
	// adoption compares in that ungated case.
	Networking domain.Networking
	// Env is injected at create and visible to every exec. Keys must be valid
	// environment-variable names (ValidateEnv); values are opaque. Bound at
	// create: an adopted sandbox keeps the Env it was created with.
	Env map[string]string
	// Hardening is the containment applied at create; the zero value applies
	// none. Bound at create like Env.
	Hardening Hardening
	// Isolation is the runtime boundary; empty means IsolationRunc.
	// Adoption compares it: a sandbox is never found again under a weaker
	// (or merely different) wall than the one asked for.
	Isolation Isolation
	// Gate, when non-nil, pairs the sandbox with a per-session egress gate that
	// owns its network namespace. Its token is the provider's to mint (its
	// ports.GateTokenIssuer): a Spec is a plain value and carries no port.
	Gate *GateSpec
}

// GateSpec configures the egress gate of a gated sandbox.
type GateSpec struct {
	// Image is the gate container image (`docker build --target gate`).
	Image string
	// ControlplaneURL is where the gate fetches its per-session config.
	ControlplaneURL string
	// OTelEndpoint and OTelInsecure hand the deployment's OTLP collector to
	// the gate, which does not inherit the executor's environment. Empty
	// means no exporter.
	OTelEndpoint string
	OTelInsecure bool
}

// maxImageRefLen bounds an image reference (Docker's own limit is 255 for the
// name; a tag and digest add to it).
const maxImageRefLen = 512

// ResolveSpec validates spec and returns it with its defaults applied: an
// empty Workdir becomes DefaultWorkdir and an empty networking type
// unrestricted. Both backends call it first, before any side effect (C-VAL-1),
// so the adoption comparison sees resolved values. Every error names the field.
func ResolveSpec(spec Spec) (Spec, error) {
	// A set id is valid by construction (domain.ID); unset is the one way left
	// to get it wrong.
	if err := spec.SessionID.Required(); err != nil {
		return Spec{}, fmt.Errorf("session_id: %w", err)
	}
	if err := validateImage("image", spec.Image); err != nil {
		return Spec{}, err
	}
	if spec.Workdir == "" {
		spec.Workdir = DefaultWorkdir
	}
	if err := ValidateWorkdir(spec.Workdir); err != nil {
		return Spec{}, err
	}
	spec.Networking = spec.Networking.Normalize()
	if err := spec.Networking.Validate(); err != nil {
		return Spec{}, err
	}
	if _, err := ParseIsolation(string(spec.Isolation)); err != nil {
		return Spec{}, err
	}
	if spec.Isolation == "" {
		spec.Isolation = IsolationRunc
	}
	if err := ValidateEnv(spec.Env); err != nil {
		return Spec{}, err
	}
	for k, v := range spec.Env {
		if strings.IndexByte(v, 0) >= 0 {
			return Spec{}, fmt.Errorf("env: value of %q holds a NUL byte, which no process environment can carry", k)
		}
	}
	if err := spec.Hardening.Validate(spec.Gate != nil); err != nil {
		return Spec{}, err
	}
	if spec.Gate != nil {
		if err := spec.Gate.validate(); err != nil {
			return Spec{}, err
		}
	}
	return spec, nil
}

// validateImage refuses an empty or malformed image reference. The registry
// grammar is the engine's to enforce; this keeps out what could never be one
// (whitespace, control characters, absurd lengths).
func validateImage(field, ref string) error {
	switch {
	case ref == "":
		return fmt.Errorf("%s: must not be empty", field)
	case len(ref) > maxImageRefLen:
		return fmt.Errorf("%s: longer than %d characters", field, maxImageRefLen)
	case strings.IndexFunc(ref, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0:
		return fmt.Errorf("%s %q: holds whitespace or control characters", field, domain.Clip(ref))
	}
	return nil
}

// ValidateWorkdir checks a resolved workdir: absolute, clean, not "/", no
// control characters, and not under a kernel filesystem (/proc, /sys, /dev),
// since writable volumes are mounted over it on a read-only root.
func ValidateWorkdir(dir string) error {
	switch {
	case !strings.HasPrefix(dir, "/"):
		return fmt.Errorf("workdir %q: must be an absolute path", domain.Clip(dir))
	case path.Clean(dir) != dir:
		return fmt.Errorf("workdir %q: must be clean (no '.', '..', '//' or trailing '/')", domain.Clip(dir))
	case dir == "/":
		return fmt.Errorf("workdir %q: must not be the root directory", dir)
	case len(dir) > 1024:
		return fmt.Errorf("workdir: longer than 1024 bytes")
	case strings.IndexFunc(dir, func(r rune) bool { return r < ' ' || r == 0x7f }) >= 0:
		return fmt.Errorf("workdir %q: holds control characters", domain.Clip(dir))
	}
	for _, k := range []string{"/proc", "/sys", "/dev"} {
		if dir == k || strings.HasPrefix(dir, k+"/") {
			return fmt.Errorf("workdir %q: must not be under %s", domain.Clip(dir), k)
		}
	}
	return nil
}

// validate checks what both backends need to run the gate.
func (g *GateSpec) validate() error {
	if err := validateImage("gate.image", g.Image); err != nil {
		return err
	}
	u, err := url.Parse(g.ControlplaneURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("gate.controlplane_url %q: must be an absolute http or https URL", domain.ClipTo(g.ControlplaneURL, 128))
	}
	return nil
}
