package sandbox

import (
	"fmt"

	"github.com/sandgate/sandgate/core/domain"
)

// NetShape is a backend-neutral reading of an ungated sandbox's network: each
// backend maps its own expression (Docker's NetworkMode, the Kubernetes
// netsetup init container) to one of these, so adoption compares meaning
// rather than configuration syntax.
type NetShape string

const (
	// NetShapeNone: no route out at all (ungated limited networking).
	NetShapeNone NetShape = "none"
	// NetShapeOpen: a default route (ungated unrestricted networking).
	NetShapeOpen NetShape = "open"
)

// wantNetShape is the shape an ungated sandbox with networking n must have.
func wantNetShape(n domain.Networking) NetShape {
	if n.Limited() {
		return NetShapeNone
	}
	return NetShapeOpen
}

// Observed is what an adapter read back from a session's existing sandbox
// before deciding whether to adopt it.
type Observed struct {
	Image   string
	Workdir string
	// Isolation is the runtime the sandbox runs under; empty reads as
	// IsolationRunc (a backend's default runtime, and every sandbox made
	// before the choice existed).
	Isolation Isolation
	// Net is the ungated network shape; ignored for a gated sandbox, whose
	// egress is pinned by the pairing.
	Net NetShape
	// Gated reports whether the sandbox is joined to a gate.
	Gated bool
	// PairedGate identifies the gate the sandbox is joined to (Docker: the
	// container id in its NetworkMode). Empty when ungated.
	PairedGate string
	// CurrentGate identifies the session's gate as it exists now (Docker: the
	// id of the session's gate container), empty when there is none. A
	// sandbox paired with anything else is joined to a stale namespace.
	CurrentGate string
}

// AdoptAction is what a provider does with an existing sandbox.
type AdoptAction int

const (
	// Adopt: return the existing sandbox as it is.
	Adopt AdoptAction = iota
	// Rebuild: remove the existing sandbox (and its gate) and create the
	// requested shape; the workspace does not survive.
	Rebuild
)

// Adoption is the decision for one existing sandbox.
type Adoption struct {
	Action AdoptAction
	// Reason says why a rebuild is needed, for the log and the error.
	Reason string
	// RevokeToken: the rebuild dismantles the gate without replacing it
	// (gated→ungated), so the session's gate token must be revoked first —
	// no later mint will ever revoke it (C-GATE-3).
	RevokeToken bool
}

// DecideAdoption compares a resolved spec (ResolveSpec) with what the adapter
// observed (C-PROV-2, C-GATE-3). Image (verbatim), workdir and isolation differences are
// ErrSpecMismatch naming the field — a different sandbox, not this one found
// again — and so is a different ungated network shape, a route the session
// never asked for. A gated↔ungated reshape or a sandbox paired with a stale
// gate is a Rebuild. A mismatch is checked before a reshape, so a refused
// provision never removes anything.
func DecideAdoption(want Spec, got Observed) (Adoption, error) {
	if got.Image != want.Image {
		return Adoption{}, fmt.Errorf("%w: image is %q, requested %q", ErrSpecMismatch, got.Image, want.Image)
	}
	if got.Workdir != want.Workdir {
		return Adoption{}, fmt.Errorf("%w: workdir is %q, requested %q", ErrSpecMismatch, got.Workdir, want.Workdir)
	}
	if got.Isolation == "" {
		got.Isolation = IsolationRunc
	}
	if got.Isolation != want.Isolation {
		return Adoption{}, fmt.Errorf("%w: isolation is %q, requested %q", ErrSpecMismatch, got.Isolation, want.Isolation)
	}
	wantGated := want.Gate != nil
	switch {
	case got.Gated && !wantGated:
		return Adoption{Action: Rebuild, Reason: "gated sandbox requested without a gate", RevokeToken: true}, nil
	case !got.Gated && wantGated:
		return Adoption{Action: Rebuild, Reason: "ungated sandbox requested with a gate"}, nil
	case wantGated:
		if got.CurrentGate == "" || got.PairedGate != got.CurrentGate {
			return Adoption{Action: Rebuild, Reason: "sandbox is paired with a gate that no longer exists"}, nil
		}
		return Adoption{Action: Adopt}, nil
	}
	if w := wantNetShape(want.Networking); got.Net != w {
		return Adoption{}, fmt.Errorf("%w: network is %q, requested %q (networking %s)", ErrSpecMismatch, got.Net, w, want.Networking.Normalize().Type)
	}
	return Adoption{Action: Adopt}, nil
}
