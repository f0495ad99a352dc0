package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/pkg/jsonmessage"

	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/ports"
)

// Provision implements ports.Provider (C-PROV-1..7).
func (p *Provider) Provision(ctx context.Context, spec sandbox.Spec) (ports.Sandbox, error) {
	p.negotiate(ctx)
	spec, err := sandbox.ResolveSpec(spec)
	if err != nil {
		return nil, fmt.Errorf("provision: %w", err)
	}
	if spec.Gate != nil && p.opts.Tokens == nil {
		return nil, fmt.Errorf("provision %s: gate: %w", spec.SessionID, errNoTokens)
	}
	if spec.Hardening.EphemeralStorageBytes > 0 {
		p.ephemeralOnce.Do(func() {
			p.opts.Logger.Warn("docker provider ignores hardening.ephemeral_storage_bytes: the writable-layer quota depends on the storage driver (docs/DIVERGENCES.md)")
		})
	}
	name := ContainerName(spec.SessionID.String())
	imageReady := false
	// A lost name race (409) sends the loop round again to adopt the winner
	// (C-PROV-4). Right after the 409 the winner may hold the name without
	// being inspectable yet, so the retries back off, bounded in time.
	giveUp := time.Now().Add(raceWait)
	for delay := 10 * time.Millisecond; ; delay = min(2*delay, 250*time.Millisecond) {
		sb, found, err := p.adoptExisting(ctx, spec, name)
		if err != nil || found {
			p.sweepOnce(ctx, sb)
			return sb, err
		}
		if !imageReady {
			if err := p.checkIsolation(ctx, spec); err != nil {
				return nil, err
			}
			if err := p.ensureImages(ctx, spec); err != nil {
				return nil, err
			}
			imageReady = true
		}
		if spec.Gate != nil {
			sb, err = p.createGated(ctx, spec, name)
		} else {
			sb, err = p.create(ctx, spec, name)
		}
		if !errors.Is(err, errNameTaken) {
			return sb, err
		}
		if time.Now().After(giveUp) {
			return nil, fmt.Errorf("provision %s: the container name is taken but its holder never became visible", spec.SessionID)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("provision %s: %w", spec.SessionID, ctx.Err())
		case <-time.After(delay):
		}
	}
}

// raceWait bounds how long a provision that lost the name race waits for
// the winner's container to become visible.
const raceWait = 10 * time.Second

// errNoTokens refuses a gated spec on a provider built without
// Options.Tokens: it could not mint the gate's token.
var errNoTokens = errors.New("a gated sandbox needs gate tokens, and this provider has none (Options.Tokens)")

// errNameTaken: the create lost the name to a concurrent provisioner.
var errNameTaken = errors.New("container name taken")

// create creates and starts the sandbox container; errNameTaken when another
// provisioner holds the name.
func (p *Provider) create(ctx context.Context, spec sandbox.Spec, name string) (ports.Sandbox, error) {
	ncpu, err := p.daemonCPUs(ctx)
	if err != nil {
		return nil, fmt.Errorf("provision %s: %w", spec.SessionID, err)
	}
	cfg, host := containerConfig(spec, ncpu, p.opts.Labels, p.opts.GVisorRuntime)
	id, err := p.createSandbox(ctx, spec, name, cfg, host)
	if err != nil {
		return nil, err
	}
	if err := p.eng.ContainerStart(ctx, id, container.StartOptions{}); err != nil {
		p.removeQuietly(id)
		return nil, translate(err, "start "+name)
	}
	return p.handle(id, spec, "", mountsAgent(host)), nil
}

// adoptExisting inspects the container holding name and adopts it. found is
// false when there is none (or a reshape just removed it); a foreign holder
// or a mismatch is an error; otherwise it returns a handle to the running
// sandbox (a stopped one is started again with its files).
func (p *Provider) adoptExisting(ctx context.Context, spec sandbox.Spec, name string) (_ ports.Sandbox, found bool, _ error) {
	c, err := p.eng.ContainerInspect(ctx, name)
	if cerrdefs.IsNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, translate(err, "inspect "+name)
	}
	if err := checkOwned(c, spec.SessionID.String()); err != nil {
		return nil, false, err
	}
	gate, err := p.pairedGate(ctx, spec, c)
	if err != nil {
		return nil, false, err
	}
	decision, err := sandbox.DecideAdoption(spec, observe(c, gate.ID))
	if err != nil {
		return nil, false, fmt.Errorf("provision %s: %w", spec.SessionID, err)
	}
	if decision.Action == sandbox.Rebuild {
		if decision.RevokeToken && p.opts.Tokens != nil {
			if err := p.opts.Tokens.Revoke(ctx, spec.SessionID); err != nil {
				return nil, false, fmt.Errorf("provision %s: revoke gate token before rebuild: %w", spec.SessionID, err)
			}
		}
		p.opts.Logger.Info("rebuilding sandbox", "session", spec.SessionID.String(), "reason", decision.Reason)
		return nil, false, p.removeSession(ctx, spec.SessionID.String())
	}
	if spec.Gate != nil {
		return p.adoptGated(ctx, spec, c, gate)
	}
	if err := p.ensureRunning(ctx, spec.SessionID.String(), c); err != nil {
		return nil, false, err
	}
	return p.handle(c.ID, spec, "", hasAgentMount(c)), true, nil
}

// ensureRunning starts an adopted sandbox of session sid that stopped; its
// files are kept.
func (p *Provider) ensureRunning(ctx context.Context, sid string, c container.InspectResponse) error {
	if c.State != nil && c.State.Running {
		return nil
	}
	p.swept.Delete(c.ID) // whatever it was writing when it stopped is stale now
	p.forgetAgent(sid, c.ID)
	return translate(p.eng.ContainerStart(ctx, c.ID, container.StartOptions{}), "start "+c.Name)
}

// forgetAgent drops the stream to the agent of a sandbox that stopped: it
// is dead even where the engine has not closed it yet (under gVisor it
// closes late), and the next call would otherwise fail on it.
func (p *Provider) forgetAgent(sid, id string) { p.agents.conns.Forget(sid, id) }

// pairedGate inspects the session's gate container for adoption: the zero
// value when there is none, and a foreign holder of the gate's name is
// refused. It looks only when the sandbox itself is gated (its network mode
// joins another container's), since only then does DecideAdoption read the
// gate, to check the pairing (C-GATE-3). An ungated sandbox needs no gate
// either way: adopting it as ungated ignores gates, and a gated request
// rebuilds it, which removes every container of the session by label, a
// leftover gate included. So adopting an ungated sandbox costs one inspect,
// not a second one answering 404 every time.
func (p *Provider) pairedGate(ctx context.Context, spec sandbox.Spec, c container.InspectResponse) (container.InspectResponse, error) {
	none := container.InspectResponse{ContainerJSONBase: &container.ContainerJSONBase{}}
	if !observe(c, "").Gated {
		return none, nil
	}
	name := GateName(spec.SessionID.String())
	g, err := p.eng.ContainerInspect(ctx, name)
	if cerrdefs.IsNotFound(err) {
		return none, nil
	}
	if err != nil {
		return g, translate(err, "inspect "+name)
	}
	return g, checkOwned(g, spec.SessionID.String())
}

// checkOwned refuses a container without the session's ownership label.
func checkOwned(c container.InspectResponse, sid string) error {
	if c.Config == nil || c.Config.Labels[sandbox.LabelSession] != sid {
		return fmt.Errorf("%s: %w", c.Name, errForeign)
	}
	return nil
}

// ensureImages makes sure the sandbox's image (and the gate's) is present
// and, for a gated sandbox, that the image does not run as the gate uid
// (B-2) — all before anything is created.
func (p *Provider) ensureImages(ctx context.Context, spec sandbox.Spec) error {
	if err := p.ensureImage(ctx, spec.Image); err != nil {
		return err
	}
	if spec.Gate == nil {
		return nil
	}
	if err := p.ensureImage(ctx, spec.Gate.Image); err != nil {
		return err
	}
	if spec.Hardening.RunAsUser != nil {
		return nil // it overrides the image's user; Validate refused the gate uid
	}
	return p.checkImageUser(ctx, spec.Image)
}

// ensureImage pulls ref when the daemon does not have it (C-PROV-6). An
// unpullable image is an error that says so, with the daemon's reason.
func (p *Provider) ensureImage(ctx context.Context, ref string) error {
	_, err := p.eng.ImageInspect(ctx, ref)
	switch {
	case err == nil:
		return nil
	case cerrdefs.IsInvalidArgument(err):
		return imageErr(ref, "is not a valid image reference", err)
	case !cerrdefs.IsNotFound(err):
		return translate(err, "inspect image "+ref)
	}
	rc, err := p.eng.ImagePull(ctx, ref, image.PullOptions{})
	if err != nil {
		return imageErr(ref, "is not present and cannot be pulled", err)
	}
	defer func() { _ = rc.Close() }()
	// The pull reports failures inside its progress stream.
	if err := jsonmessage.DisplayJSONMessagesStream(rc, io.Discard, 0, false, nil); err != nil {
		return imageErr(ref, "is not present and cannot be pulled", err)
	}
	return nil
}

// imageErr is a failed image inspect or pull: sandbox.ErrImageUnavailable
// with the daemon's reason, unless the caller's context ended (which is the
// caller's, not the image's).
func imageErr(ref, what string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("image %q: %w", ref, err)
	}
	return fmt.Errorf("image %q %s: %w: %s", ref, what, sandbox.ErrImageUnavailable, scrubHostPaths(err.Error()))
}
