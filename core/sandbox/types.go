// Package sandbox is the pure half of the sandbox API (docs/sandbox-api.txt):
// the spec and result types, the sentinels, validation of everything a caller
// can hand in, the adoption decision, write planning, the shell snippets both
// backends run inside a sandbox, the exec deadline verdict and output capping.
// It performs no I/O and imports only the standard library; the Provider and
// Sandbox ports that use it live in package ports.
package sandbox

import (
	"time"

	"github.com/sandgate/sandgate/core/domain"
)

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

// ExecRequest is one command to run with `/bin/bash -c` in the workdir.
type ExecRequest struct {
	Command string
	// Timeout is rounded up to whole seconds; 0 means no limit but the
	// context.
	Timeout time.Duration
}

// ExecResult is what a finished command did. A non-zero exit, output on
// stderr and a command killed at its deadline are all results, not errors.
type ExecResult struct {
	Stdout    string
	Stderr    string
	ExitCode  int
	TimedOut  bool
	Truncated bool
}

// FileWrite is one member of a WriteFiles batch. Path must be absolute and
// clean.
type FileWrite struct {
	Path string
	Data []byte
}
