package domain

import (
	"fmt"
	"strings"
)

// NetworkType names a session's egress policy.
type NetworkType string

const (
	// NetUnrestricted lets the sandbox reach any public host.
	NetUnrestricted NetworkType = "unrestricted"
	// NetLimited lets it reach only AllowedHosts (through the gate), or nothing
	// at all when the sandbox has no gate.
	NetLimited NetworkType = "limited"
)

// Networking is a session's egress policy. The zero value is unrestricted
// networking: Type "" is read as NetUnrestricted everywhere (Normalize), which
// is what a caller that never thought about networking gets.
type Networking struct {
	Type         NetworkType `json:"type"`
	AllowedHosts []string    `json:"allowed_hosts,omitempty"`
}

// maxAllowedHosts bounds the allowlist: it is copied into every gate config.
const maxAllowedHosts = 1024

// Normalize returns n with an empty Type resolved to NetUnrestricted.
func (n Networking) Normalize() Networking {
	if n.Type == "" {
		n.Type = NetUnrestricted
	}
	return n
}

// Limited reports whether the policy restricts egress.
func (n Networking) Limited() bool { return n.Normalize().Type == NetLimited }

// Validate checks the type and the shape of every allowed host (non-empty, no
// whitespace, no scheme or path). Matching semantics live in core/egress.
func (n Networking) Validate() error {
	n = n.Normalize()
	switch n.Type {
	case NetUnrestricted, NetLimited:
	default:
		return fmt.Errorf("networking.type %q: must be %q or %q", Clip(string(n.Type)), NetUnrestricted, NetLimited)
	}
	if len(n.AllowedHosts) > maxAllowedHosts {
		return fmt.Errorf("networking.allowed_hosts: %d entries, at most %d", len(n.AllowedHosts), maxAllowedHosts)
	}
	for i, h := range n.AllowedHosts {
		// 253 for a name, plus "*.", brackets and ":65535".
		if h == "" || len(h) > 253+10 || strings.ContainsAny(h, " \t\r\n\\@?#\x00") || strings.Contains(h, "://") {
			return fmt.Errorf("networking.allowed_hosts[%d] %q: must be a host name, an IP address or a CIDR, optionally with :port", i, Clip(h))
		}
	}
	return nil
}
