// Package session is what a session is and how a request becomes one: the
// record the control plane stores about a session besides its sandbox (the
// networking policy, the credentials the gate substitutes at egress, the
// gate config it maps to), the request that asks for one (Request, its
// validation) and BuildSpec, which turns a request into the sandbox.Spec to
// provision and the record to store first; the checks of a call's paths and
// command before any sandbox is asked (CheckPath, CheckExec, …); and the
// sealing of secrets at rest. It is pure: storage lives behind
// ports.TokenStore, and app/executor drives the provider and the store with
// what it returns.
package session

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/gatewire"
)

// Sentinels of the session store, matched with errors.Is.
var (
	// ErrNotFound: no session record is stored under the id.
	ErrNotFound = errors.New("session not found")
	// ErrInvalid: a session record, credential or token handed to the store
	// is malformed; the error names the field.
	ErrInvalid = errors.New("invalid session record")
)

// Location is where in a request the gate may substitute a credential's
// placeholder.
type Location string

const (
	// LocationHeaders enables substitution in request header values.
	LocationHeaders Location = "headers"
	// LocationBody enables substitution in the request body.
	LocationBody Location = "body"
)

// Limits keep one record bounded: every record is copied into each gate
// config fetch.
const (
	// MaxCredentials bounds the credentials of one session.
	MaxCredentials = 256
	// MinSecretBytes and MaxSecretBytes bound one secret: the gate refuses a
	// config outside gatewire's bounds, so the store refuses it first
	// rather than accept a session whose gate could never become ready.
	MinSecretBytes = gatewire.MinSecretBytes
	MaxSecretBytes = gatewire.MaxSecretBytes
	// maxNameLen bounds a credential id and name.
	maxNameLen = 256
	// maxCredentialHosts bounds one credential's host list.
	maxCredentialHosts = 256
)

// Secret is a credential's value. Its String and GoString methods redact it,
// so a Session printed with %v or %#v by accident never shows it; the value
// is read with an explicit string(s).
type Secret string

// String returns a fixed redaction, never the secret.
func (Secret) String() string { return "[redacted]" }

// GoString returns a fixed redaction, never the secret.
func (Secret) GoString() string { return `session.Secret("[redacted]")` }

// Credential is one secret bound to the hosts it may be sent to.
type Credential struct {
	// ID identifies the credential to the caller and in gate spans (never the
	// value). Unique within the session.
	ID string
	// Name is the secret's name; the placeholder is derived from the session
	// id and this name, so it is stable across re-provisions. Unique within
	// the session.
	Name string
	// Secret is the value the gate substitutes for the placeholder. It is
	// stored only sealed (AES-GCM).
	Secret Secret
	// AllowedHosts are the hosts the secret may reach, in the syntax of
	// domain.Networking.AllowedHosts. At least one.
	AllowedHosts []string
	// Locations are where the placeholder is substituted. At least one.
	Locations []Location
}

// Session is a session's stored egress policy and credentials.
type Session struct {
	ID          domain.ID
	Networking  domain.Networking
	Credentials []Credential
	// Image and Workdir are the sandbox's, as provisioned (defaults applied),
	// so every executor sharing the store reports them. The caller's env is
	// not stored: its values may be secrets, and a re-provision carries its
	// own.
	Image   string
	Workdir string
	// LastActive is the session's last API call as the store knows it (the
	// reaper's idle clock); zero for a record written before it was kept.
	LastActive time.Time
}

// Validate checks the record before it is stored: a valid session id and
// networking policy, and credentials with non-empty unique ids and names, a
// non-empty bounded secret, well-formed hosts and known locations. The error
// wraps ErrInvalid (or domain.ErrInvalidID) and names the field; it never
// contains a secret.
func (s Session) Validate() error {
	if err := domain.ValidateSessionID(s.ID); err != nil {
		return err
	}
	if err := s.Networking.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if len(s.Credentials) > MaxCredentials {
		return fmt.Errorf("%w: credentials: %d entries, at most %d", ErrInvalid, len(s.Credentials), MaxCredentials)
	}
	ids := make(map[string]bool, len(s.Credentials))
	names := make(map[string]bool, len(s.Credentials))
	for i, c := range s.Credentials {
		if err := c.validate(); err != nil {
			return fmt.Errorf("%w: credentials[%d].%w", ErrInvalid, i, err)
		}
		if ids[c.ID] {
			return fmt.Errorf("%w: credentials[%d].id %q: duplicate", ErrInvalid, i, c.ID)
		}
		if names[c.Name] {
			return fmt.Errorf("%w: credentials[%d].name %q: duplicate", ErrInvalid, i, c.Name)
		}
		ids[c.ID], names[c.Name] = true, true
	}
	return nil
}

// validate checks one credential; the error starts with the field name so
// the caller can prefix "credentials[i].".
func (c Credential) validate() error {
	if err := validName(c.ID); err != nil {
		return fmt.Errorf("id %w", err)
	}
	if err := validName(c.Name); err != nil {
		return fmt.Errorf("name %w", err)
	}
	if len(c.Secret) < MinSecretBytes || len(c.Secret) > MaxSecretBytes {
		return fmt.Errorf("secret: must be %d to %d bytes, got %d", MinSecretBytes, MaxSecretBytes, len(c.Secret))
	}
	if strings.Contains(string(c.Secret), gatewire.PlaceholderPrefix) {
		// It could smuggle a placeholder past the gate's one-pass
		// substitution; the gate refuses such a config too.
		return fmt.Errorf("secret: must not contain %q", gatewire.PlaceholderPrefix)
	}
	if len(c.AllowedHosts) == 0 || len(c.AllowedHosts) > maxCredentialHosts {
		return fmt.Errorf("allowed_hosts: must hold 1 to %d hosts, got %d", maxCredentialHosts, len(c.AllowedHosts))
	}
	hosts := domain.Networking{Type: domain.NetLimited, AllowedHosts: c.AllowedHosts}
	if err := hosts.Validate(); err != nil {
		return fmt.Errorf("allowed_hosts: %w", err)
	}
	if len(c.Locations) == 0 {
		return errors.New("locations: must name at least one of headers, body")
	}
	seen := map[Location]bool{}
	for i, l := range c.Locations {
		if l != LocationHeaders && l != LocationBody {
			return fmt.Errorf("locations[%d] %.64q: must be %q or %q", i, l, LocationHeaders, LocationBody)
		}
		if seen[l] {
			return fmt.Errorf("locations[%d] %q: duplicate", i, l)
		}
		seen[l] = true
	}
	return nil
}

// validName accepts 1..256 printable ASCII characters: ids and names reach
// spans, logs and placeholders. Errors quote at most 64 characters (%.64q).
func validName(s string) error {
	if s == "" || len(s) > maxNameLen {
		return fmt.Errorf("%.64q: must be 1 to %d characters", s, maxNameLen)
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return fmt.Errorf("%.64q: character at offset %d is not printable ASCII", s, i)
		}
	}
	return nil
}
