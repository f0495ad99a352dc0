package session

import (
	"fmt"
	"maps"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/egress"
	"github.com/sandgate/sandgate/core/sandbox"
)

// Defaults is the executor's configuration that shapes every Spec.
type Defaults struct {
	// Image is the sandbox image of a request that names none.
	Image string
	// GateImage is the egress gate's image; empty means this executor runs
	// no gates (see BuildSpec).
	GateImage string
	// ControlplaneURL is where the gates fetch their config.
	ControlplaneURL string
	// OTelEndpoint and OTelInsecure are handed to every gate (GateSpec).
	OTelEndpoint string
	OTelInsecure bool
	// Hardening is applied to every sandbox this executor creates.
	Hardening sandbox.Hardening
	// Isolation is the runtime of a request that names none (empty:
	// sandbox.IsolationRunc).
	Isolation sandbox.Isolation
}

// BuildSpec validates req for session sid and returns the Spec to provision
// and the session record to store first (the gate fetches it).
//
// The Spec's Env is the caller's env plus NAME=egress.Placeholder(sid, NAME)
// for every credential, so the sandbox holds placeholders and never a
// secret. The sandbox is gated whenever its networking is limited or it
// carries credentials, and d.GateImage is set. Without a gate image a
// session with credentials is refused (ErrGateUnavailable, an
// ErrInvalidRequest too: its placeholders could never be swapped), and a
// limited one without credentials runs ungated under the backend's own
// fail-closed containment.
//
// The Spec is a plain value: the gate's token is minted by the provider
// (its ports.GateTokenIssuer). Errors wrap ErrInvalidRequest (or
// domain.ErrInvalidID) and name the field.
func BuildSpec(sid domain.ID, req Request, d Defaults) (sandbox.Spec, Session, error) {
	if err := req.Validate(sid); err != nil {
		return sandbox.Spec{}, Session{}, err
	}
	rec := req.Session(sid)
	wantGate := rec.Networking.Limited() || len(rec.Credentials) > 0
	if wantGate && d.GateImage == "" && len(rec.Credentials) > 0 {
		return sandbox.Spec{}, Session{}, fmt.Errorf("%w: %w: credentials: a session with credentials needs an egress gate (SANDGATE_GATE_IMAGE)", ErrInvalidRequest, ErrGateUnavailable)
	}
	spec := sandbox.Spec{
		SessionID:  sid,
		Image:      req.Image,
		Workdir:    req.Workdir,
		Networking: copyNetworking(rec.Networking),
		Env:        maps.Clone(req.Env),
		Hardening:  d.Hardening,
		Isolation:  req.Isolation,
	}
	if spec.Isolation == "" {
		spec.Isolation = d.Isolation
	}
	if spec.Image == "" {
		spec.Image = d.Image
	}
	if spec.Image == "" {
		return sandbox.Spec{}, Session{}, fmt.Errorf("%w: image: must not be empty (no default image is configured)", ErrInvalidRequest)
	}
	if wantGate && d.GateImage != "" {
		if err := gateEnvFree(req.Env); err != nil {
			return sandbox.Spec{}, Session{}, err
		}
		spec.Gate = &sandbox.GateSpec{
			Image: d.GateImage, ControlplaneURL: d.ControlplaneURL,
			OTelEndpoint: d.OTelEndpoint, OTelInsecure: d.OTelInsecure,
		}
	}
	for _, c := range rec.Credentials {
		if spec.Env == nil {
			spec.Env = map[string]string{}
		}
		spec.Env[c.Name] = egress.Placeholder(sid, c.Name)
	}
	spec, err := resolve(spec)
	if err != nil {
		return sandbox.Spec{}, Session{}, err
	}
	rec.Image, rec.Workdir, rec.Isolation = spec.Image, spec.Workdir, spec.Isolation
	return spec, rec, nil
}

// resolve runs the providers' own validation (sandbox.ResolveSpec: the image
// reference, the configured hardening and gate) now, so a request the
// provider would refuse is answered as invalid rather than as a backend
// failure, and returns the spec with its defaults applied.
func resolve(spec sandbox.Spec) (sandbox.Spec, error) {
	resolved, err := sandbox.ResolveSpec(spec)
	if err != nil {
		return sandbox.Spec{}, fmt.Errorf("%w: %w", ErrInvalidRequest, err)
	}
	return resolved, nil
}

// gateEnvFree refuses a gated session's variable that the gate pairing sets:
// the provider would silently replace it.
func gateEnvFree(env map[string]string) error {
	for _, k := range sortedKeys(env) {
		if gateVariable(k) {
			return fmt.Errorf("%w: env: %q is set by the egress gate in a gated session", ErrInvalidRequest, k)
		}
	}
	return nil
}
