// Package sandbox is the pure half of the sandbox API (seed/sandbox-api.txt):
// the spec and result types, the sentinels, validation of everything a caller
// can hand in, the adoption decision, write planning, the shell snippets both
// backends run inside a sandbox, the exec deadline verdict and output capping.
// It performs no I/O and imports only the standard library; the Provider and
// Sandbox ports that use it live in package ports.
package sandbox

import (
	"context"
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
	// owns its network namespace.
	Gate *GateSpec
	// GateTokenRevoker revokes the session's gate token when a provision
	// dismantles a gate without replacing it (gated→ungated reshape) and
	// before Reap removes anything. nil skips revocation.
	GateTokenRevoker GateTokenRevoker
}

// GateSpec configures the egress gate of a gated sandbox.
type GateSpec struct {
	// Image is the gate container image (`docker build --target gate`).
	Image string
	// ControlplaneURL is where the gate fetches its per-session config.
	ControlplaneURL string
	// TokenMinter mints the gate's per-session token: generated in memory
	// before the create, persisted only once this provider has won it, so an
	// adoption never revokes the token a running gate uses. Required.
	TokenMinter GateTokenMinter
	// OTelEndpoint and OTelInsecure hand the deployment's OTLP collector to
	// the gate, which does not inherit the executor's environment. Empty
	// means no exporter.
	OTelEndpoint string
	OTelInsecure bool
}

// GateTokenMinter mints gate tokens in two steps (C-GATE-2).
type GateTokenMinter interface {
	// Generate returns a fresh gate token in memory, with no durable effect.
	Generate() string
	// Persist records token as sessionID's live gate token (by hash),
	// revoking the previous one. The provider calls it only after creating
	// the gate with that token. It returns the store's error unchanged.
	Persist(ctx context.Context, sessionID domain.ID, token string) error
}

// GateTokenRevoker revokes a session's live gate token.
type GateTokenRevoker interface {
	// Revoke makes the session's token fail authentication at once. Revoking
	// a session with no token is not an error.
	Revoke(ctx context.Context, sessionID domain.ID) error
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
