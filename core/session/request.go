package session

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/egress"
	"github.com/sandgate/sandgate/core/gatewire"
	"github.com/sandgate/sandgate/core/sandbox"
)

// Sentinels of a request to the executor's service, matched with errors.Is.
var (
	// ErrInvalidRequest: a request (its body, a path or a parameter) is
	// malformed; the error names the field and never quotes a secret.
	ErrInvalidRequest = errors.New("invalid request")
	// ErrGateUnavailable: the session needs an egress gate (it carries
	// credentials) and no gate image is configured. It always comes wrapped
	// with ErrInvalidRequest.
	ErrGateUnavailable = errors.New("no gate image is configured")
)

// MaxEnv bounds the caller's environment variables, and MaxEnvBytes the
// bytes of all their names and values: every one is copied into the
// sandbox's create call and lives in every process it runs.
const (
	MaxEnv      = 1024
	MaxEnvBytes = 1 << 20
)

// Request is what the orchestrator asks a session's sandbox to be: the
// body of `PUT /v1/sessions/{id}` once the HTTP adapter has decoded it (its
// JSON form lives at the HTTP edge, in adapters/httpapi).
type Request struct {
	// Image is the sandbox image; empty means the executor's default image.
	Image string
	// Workdir is where commands run; empty means sandbox.DefaultWorkdir.
	Workdir string
	// Networking is the egress policy; the zero value is unrestricted.
	Networking domain.Networking
	// Isolation is the sandbox's runtime; empty means the executor's
	// default (Defaults.Isolation).
	Isolation sandbox.Isolation
	// Env is visible to every exec. Reserved names (sandbox.ReservedEnvName)
	// and credential names are refused.
	Env map[string]string
	// Credentials are the secrets the gate substitutes at egress; the sandbox
	// sees only a placeholder in the variable named Name.
	Credentials []Credential
}

// Session returns the record the store keeps for the request: the
// normalised networking policy and the credentials, copied.
func (r Request) Session(sid domain.ID) Session {
	s := Session{ID: sid, Networking: copyNetworking(r.Networking.Normalize())}
	for _, c := range r.Credentials {
		c.AllowedHosts = append([]string(nil), c.AllowedHosts...)
		c.Locations = append([]gatewire.Location(nil), c.Locations...)
		s.Credentials = append(s.Credentials, c)
	}
	return s
}

// Validate checks the request for session sid. Every error wraps
// ErrInvalidRequest (domain.ErrInvalidID too, for the zero id) and names the
// field; none quotes a secret or an env value, which may be one.
func (r Request) Validate(sid domain.ID) error {
	if err := r.Session(sid).Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidRequest, err)
	}
	if err := r.validatePatterns(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidRequest, err)
	}
	if r.Workdir != "" {
		if err := sandbox.ValidateWorkdir(r.Workdir); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidRequest, err)
		}
	}
	if _, err := sandbox.ParseIsolation(string(r.Isolation)); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidRequest, err)
	}
	if err := r.validateEnv(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidRequest, err)
	}
	return nil
}

// validatePatterns parses every allowed_hosts entry as the gate will
// (egress.ParsePattern), so an entry the gate would refuse — and a gate
// that refuses its config denies everything — is a 400 now instead.
func (r Request) validatePatterns() error {
	check := func(field string, hosts []string) error {
		for i, h := range hosts {
			if _, err := egress.ParsePattern(h); err != nil {
				return fmt.Errorf("%s[%d]: %w", field, i, err)
			}
		}
		return nil
	}
	if err := check("networking.allowed_hosts", r.Networking.AllowedHosts); err != nil {
		return err
	}
	for i, c := range r.Credentials {
		if err := check(fmt.Sprintf("credentials[%d].allowed_hosts", i), c.AllowedHosts); err != nil {
			return err
		}
	}
	return nil
}

// validateEnv checks the caller's variables and the names the credentials
// will take in the same environment.
func (r Request) validateEnv() error {
	if len(r.Env) > MaxEnv {
		return fmt.Errorf("env: %d variables, at most %d", len(r.Env), MaxEnv)
	}
	if err := sandbox.ValidateEnv(r.Env); err != nil {
		return err
	}
	size := 0
	for _, k := range sortedKeys(r.Env) {
		v := r.Env[k]
		size += len(k) + len(v)
		switch {
		case sandbox.ReservedEnvName(k):
			return fmt.Errorf("env: %q is reserved by the platform", k)
		case containsNUL(v):
			return fmt.Errorf("env: value of %q holds a NUL byte", k)
		}
	}
	if size > MaxEnvBytes {
		return fmt.Errorf("env: %d bytes of names and values, at most %d", size, MaxEnvBytes)
	}
	for i, c := range r.Credentials {
		switch {
		case !sandbox.ValidEnvName(c.Name):
			return fmt.Errorf("credentials[%d].name %q: must be an environment variable name ([A-Za-z_][A-Za-z0-9_]*)", i, domain.Clip(c.Name))
		case sandbox.ReservedEnvName(c.Name) || gateVariable(c.Name):
			return fmt.Errorf("credentials[%d].name %q: is reserved by the platform", i, c.Name)
		}
		if _, ok := r.Env[c.Name]; ok {
			return fmt.Errorf("credentials[%d].name %q: collides with env %q", i, c.Name, c.Name)
		}
	}
	return nil
}

// gateEnv is what a gated sandbox's environment gets from the provider; a
// caller's value for one of these would be silently replaced, so it is
// refused instead.
var gateEnv = sandbox.GateSandboxEnv()

// gateVariable reports whether the gate pairing sets the variable name.
func gateVariable(name string) bool {
	_, ok := gateEnv[name]
	return ok
}

func containsNUL(s string) bool { return strings.IndexByte(s, 0) >= 0 }

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func copyNetworking(n domain.Networking) domain.Networking {
	n.AllowedHosts = slices.Clone(n.AllowedHosts)
	return n
}
