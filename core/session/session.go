// Package session is what a session is and how a request becomes one: the
// record the control plane stores about a session besides its sandbox (the
// networking policy, the credentials the gate substitutes at egress, the
// gate config it maps to), the request that asks for one (Request, its
// validation) and BuildSpec, which turns a request into the sandbox.Spec to
// provision and the record to store first; the checks of a call's paths and
// command before any sandbox is asked (CheckPath, CheckExec, …); and the
// sealing of secrets at rest. It is pure: storage lives behind
// ports.SessionStore, and app/executor drives the provider and the store with
// what it returns.
package session

import (
	"errors"
	"fmt"
	"time"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/gatewire"
	"github.com/sandgate/sandgate/core/sandbox"
)

// Sentinels of the session store, matched with errors.Is.
var (
	// ErrNotFound: no session record is stored under the id.
	ErrNotFound = errors.New("session not found")
	// ErrInvalid: a session record, credential or token handed to the store
	// is malformed; the error names the field.
	ErrInvalid = errors.New("invalid session record")
)

// maxNameLen bounds a credential id and name. The other bounds of a record
// are the gate config's (gatewire.MaxCredentials, ValidateBinding): every
// record is copied into each config fetch, and the gate refuses a config
// outside them.
const maxNameLen = 256

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
	// stored only sealed (AES-GCM); every printing path redacts it.
	Secret gatewire.Secret
	// AllowedHosts are the hosts the secret may reach, in the syntax of
	// domain.Networking.AllowedHosts. At least one.
	AllowedHosts []string
	// Locations are where the placeholder is substituted. At least one.
	Locations []gatewire.Location
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
	// Isolation is the sandbox's runtime as provisioned; empty for a record
	// written before the choice existed (runc).
	Isolation sandbox.Isolation
	// LastActive is the session's last API call as the store knows it (the
	// reaper's idle clock); zero for a record written before it was kept.
	LastActive time.Time
}

// Validate checks the record before it is stored: a set session id and
// networking policy, and credentials with non-empty unique ids and names
// and what gatewire.ValidateBinding checks (a bounded secret, well-formed
// hosts, known locations), so that its gate takes the config it maps to.
// The error wraps ErrInvalid (or domain.ErrInvalidID) and names the field;
// it never contains a secret.
func (s Session) Validate() error {
	if err := s.ID.Required(); err != nil {
		return err
	}
	if err := s.Networking.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if len(s.Credentials) > gatewire.MaxCredentials {
		return fmt.Errorf("%w: credentials: %d entries, at most %d", ErrInvalid, len(s.Credentials), gatewire.MaxCredentials)
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
	return gatewire.ValidateBinding(c.Secret, c.AllowedHosts, c.Locations)
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
