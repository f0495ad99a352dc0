package gatewire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/sandgate/sandgate/core/domain"
)

// Limits of a config. They bound the gate's work per request (every
// credential is matched against every bound request) and keep a hostile or
// broken control plane from making the gate allocate without bound.
const (
	// MaxConfigBytes bounds the document the gate reads.
	MaxConfigBytes = 4 << 20
	// MaxCredentials bounds the credentials of one session.
	MaxCredentials = 256
	// MaxCredentialHosts bounds one credential's allowed_hosts.
	MaxCredentialHosts = 64
	// MinSecretBytes refuses secrets so short that redacting their echoes
	// would mangle ordinary response text (and that guessing would find).
	MinSecretBytes = 8
	// MaxSecretBytes bounds a secret (large enough for a PEM key or a JWT).
	MaxSecretBytes = 8 << 10
	// maxIDLen bounds ids and the version: they reach span attributes.
	maxIDLen = 128
	// min/maxPlaceholderBody bound the encoded part after the prefix.
	minPlaceholderBody = 16
	maxPlaceholderBody = 64
)

// Parse decodes a config document and validates it. Its errors wrap
// ErrInvalid and never quote the input (a syntax error reports only the
// offset, because encoding/json's message can echo a byte of a secret).
func Parse(data []byte) (Config, error) {
	if len(data) > MaxConfigBytes {
		return Config{}, fmt.Errorf("%w: document is %d bytes, at most %d", ErrInvalid, len(data), MaxConfigBytes)
	}
	var c Config
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&c); err != nil {
		var syn *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &syn):
			return Config{}, fmt.Errorf("%w: malformed JSON at offset %d", ErrInvalid, syn.Offset)
		case errors.As(err, &typ):
			return Config{}, fmt.Errorf("%w: field %s: wrong JSON type", ErrInvalid, typ.Field)
		case errors.Is(err, ErrInvalid):
			return Config{}, err
		default:
			return Config{}, fmt.Errorf("%w: malformed JSON", ErrInvalid)
		}
	}
	if dec.More() {
		return Config{}, fmt.Errorf("%w: trailing data after the document", ErrInvalid)
	}
	return c, c.Validate()
}

// Validate checks the config's shape: an explicit networking type, host
// entries that look like hosts, and for every credential a unique id, a
// unique well-formed placeholder, a secret of sane length, at least one
// allowed host and at least one known location. The error names the field
// (e.g. "credentials[2].locations[0]") and wraps ErrInvalid. The meaning of
// host patterns is checked by egress.Compile.
func (c Config) Validate() error {
	if len(c.Version) > maxIDLen || !printable(c.Version) {
		return fmt.Errorf("%w: version: at most %d printable ASCII characters", ErrInvalid, maxIDLen)
	}
	if c.Networking.Type == "" {
		return fmt.Errorf("%w: networking.type: missing (want %q or %q)", ErrInvalid, domain.NetUnrestricted, domain.NetLimited)
	}
	if err := c.Networking.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if len(c.Credentials) > MaxCredentials {
		return fmt.Errorf("%w: credentials: %d entries, at most %d", ErrInvalid, len(c.Credentials), MaxCredentials)
	}
	ids := make(map[string]int, len(c.Credentials))
	phs := make(map[string]int, len(c.Credentials))
	for i, cr := range c.Credentials {
		if err := cr.validate(); err != nil {
			return fmt.Errorf("%w: credentials[%d].%w", ErrInvalid, i, err)
		}
		if j, dup := ids[cr.ID]; dup {
			return fmt.Errorf("%w: credentials[%d].id %q: duplicate of credentials[%d]", ErrInvalid, i, cr.ID, j)
		}
		if j, dup := phs[cr.Placeholder]; dup {
			return fmt.Errorf("%w: credentials[%d].placeholder %q: duplicate of credentials[%d]", ErrInvalid, i, cr.Placeholder, j)
		}
		ids[cr.ID], phs[cr.Placeholder] = i, i
	}
	return nil
}

// fieldError names a field of a credential; Validate prefixes its index.
type fieldError struct{ field, problem string }

func (e *fieldError) Error() string { return e.field + ": " + e.problem }

func (cr Credential) validate() error {
	switch {
	case cr.ID == "" || len(cr.ID) > maxIDLen || !idChars(cr.ID):
		return &fieldError{"id", fmt.Sprintf("%.64q: want 1 to %d characters of [A-Za-z0-9._-]", cr.ID, maxIDLen)}
	case !validPlaceholder(cr.Placeholder):
		return &fieldError{"placeholder", fmt.Sprintf("%.64q: want %q and %d to %d characters of [a-z0-9]", cr.Placeholder, PlaceholderPrefix, minPlaceholderBody, maxPlaceholderBody)}
	}
	return ValidateBinding(cr.Secret, cr.AllowedHosts, cr.Locations)
}

// ValidateBinding checks what binds a secret to where it may go, the part
// of a credential that the gate config and the session record the control
// plane stores (core/session) share: a secret of MinSecretBytes to
// MaxSecretBytes that holds no placeholder, 1 to MaxCredentialHosts
// well-formed hosts, and at least one location, each known and given once.
// The control plane checks it when it stores a record, so that it never
// accepts a session whose gate would refuse its config and never become
// ready. The error starts with the field ("secret: …") for the caller to
// prefix "credentials[i]."; it never quotes the secret.
func ValidateBinding(secret Secret, allowedHosts []string, locations []Location) error {
	switch {
	case secret.Len() < MinSecretBytes || secret.Len() > MaxSecretBytes:
		return &fieldError{"secret", fmt.Sprintf("%d bytes, want %d to %d", secret.Len(), MinSecretBytes, MaxSecretBytes)}
	case strings.Contains(secret.Reveal(), PlaceholderPrefix):
		// A secret that contained a placeholder could smuggle one past the
		// one-pass substitution and confuse echo redaction.
		return &fieldError{"secret", fmt.Sprintf("must not contain %q", PlaceholderPrefix)}
	case len(allowedHosts) == 0 || len(allowedHosts) > MaxCredentialHosts:
		return &fieldError{"allowed_hosts", fmt.Sprintf("%d entries, want 1 to %d", len(allowedHosts), MaxCredentialHosts)}
	case len(locations) == 0:
		return &fieldError{"locations", fmt.Sprintf("empty, want %q and/or %q", LocationHeaders, LocationBody)}
	}
	if err := (domain.Networking{Type: domain.NetLimited, AllowedHosts: allowedHosts}).Validate(); err != nil {
		return fmt.Errorf("allowed_hosts%s", strings.TrimPrefix(err.Error(), "networking.allowed_hosts"))
	}
	seen := map[Location]bool{}
	for i, l := range locations {
		if l != LocationHeaders && l != LocationBody || seen[l] {
			return &fieldError{fmt.Sprintf("locations[%d]", i), fmt.Sprintf("%.64q: want %q or %q, each once", l, LocationHeaders, LocationBody)}
		}
		seen[l] = true
	}
	return nil
}

func validPlaceholder(p string) bool {
	body, ok := strings.CutPrefix(p, PlaceholderPrefix)
	if !ok || len(body) < minPlaceholderBody || len(body) > maxPlaceholderBody {
		return false
	}
	for i := 0; i < len(body); i++ {
		if c := body[i]; (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

func idChars(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') && c != '.' && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
