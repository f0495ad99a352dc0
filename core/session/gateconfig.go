package session

import (
	"slices"

	"github.com/sandgate/sandgate/core/egress"
	"github.com/sandgate/sandgate/core/gatewire"
)

// ConfigFor maps a session's stored record to the document its gate fetches
// (GET /internal/v1/gate/config): the networking policy with its type made
// explicit (the wire contract refuses an empty one, where a stored record
// means unrestricted, as domain.Networking.Normalize reads it), and every
// credential with its id, its placeholder (egress.Placeholder(s.ID, name), so the
// sandbox's environment and the gate agree across re-provisions), its secret,
// allowed hosts and locations, in the stored order.
//
// It copies every slice: the result never aliases s. It does not validate:
// the store validated the record when it was put, and the gate validates what
// it receives (gatewire.Parse) and keeps its last good config otherwise.
func ConfigFor(s Session) gatewire.Config {
	n := s.Networking.Normalize()
	n.AllowedHosts = slices.Clone(n.AllowedHosts)
	creds := make([]gatewire.Credential, len(s.Credentials))
	for i, c := range s.Credentials {
		creds[i] = gatewire.Credential{
			ID:           c.ID,
			Placeholder:  egress.Placeholder(s.ID, c.Name),
			Secret:       c.Secret,
			AllowedHosts: slices.Clone(c.AllowedHosts),
			Locations:    slices.Clone(c.Locations),
		}
	}
	return gatewire.Config{Networking: n, Credentials: creds}
}
