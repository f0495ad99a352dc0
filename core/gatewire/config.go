package gatewire

import (
	"errors"
	"log/slog"

	"github.com/sandgate/sandgate/core/domain"
)

// ErrInvalid is wrapped by every error Parse and Validate return.
var ErrInvalid = errors.New("invalid gate config")

// Location names a part of a request in which a credential's placeholder is
// replaced by its secret.
type Location string

const (
	// LocationHeaders enables substitution in request header values.
	LocationHeaders Location = "headers"
	// LocationBody enables substitution in the request body (up to 10 MiB).
	LocationBody Location = "body"
)

// Config is the document the config endpoint serves for one session.
type Config struct {
	// Version identifies this revision of the config (an etag the gate logs
	// and may send back as If-None-Match); opaque, optional.
	Version string `json:"version,omitempty"`
	// Networking is the session's policy. Type must be explicit here: the
	// gate refuses a config without one rather than reading "" as
	// unrestricted the way domain.Networking.Normalize does for callers.
	Networking domain.Networking `json:"networking"`
	// Credentials are the secrets the gate substitutes for their
	// placeholders.
	Credentials []Credential `json:"credentials"`
}

// Credential binds one secret to the hosts that may receive it.
type Credential struct {
	// ID names the credential in spans and logs (B-5 records ids, never
	// values).
	ID string `json:"id"`
	// Placeholder is what the sandbox sees instead of the secret
	// (egress.Placeholder derives it: "sgph_" + base32).
	Placeholder string `json:"placeholder"`
	// Secret is the plaintext the gate puts in place of Placeholder.
	Secret Secret `json:"secret"`
	// AllowedHosts are the host patterns (the allowed_hosts grammar of
	// C-GW-2) to which the secret may be sent; the session's policy must
	// admit the host as well.
	AllowedHosts []string `json:"allowed_hosts"`
	// Locations are the parts of a request substitution applies to.
	Locations []Location `json:"locations"`
}

// Enabled reports whether substitution applies at loc.
func (c Credential) Enabled(loc Location) bool {
	for _, l := range c.Locations {
		if l == loc {
			return true
		}
	}
	return false
}

// LogValue implements slog.LogValuer: the JSON handler would otherwise
// marshal the struct, secret included.
func (c Credential) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("id", c.ID),
		slog.String("placeholder", c.Placeholder),
		slog.Int("secret_len", c.Secret.Len()),
		slog.Any("allowed_hosts", c.AllowedHosts),
		slog.Any("locations", c.Locations),
	)
}

// LogValue implements slog.LogValuer: version, policy and credential ids
// only.
func (c Config) LogValue() slog.Value {
	ids := make([]string, len(c.Credentials))
	for i, cr := range c.Credentials {
		ids[i] = cr.ID
	}
	return slog.GroupValue(
		slog.String("version", c.Version),
		slog.String("networking.type", string(c.Networking.Type)),
		slog.Int("networking.allowed_hosts", len(c.Networking.AllowedHosts)),
		slog.Any("credential_ids", ids),
	)
}
