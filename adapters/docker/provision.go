package docker

import (
	"context"
	"fmt"
	"io"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/pkg/jsonmessage"

	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/ports"
)

// Provision implements ports.Provider (C-PROV-1..7).
func (p *Provider) Provision(ctx context.Context, spec sandbox.Spec) (ports.Sandbox, error) {
	spec, err := sandbox.ResolveSpec(spec)
	if err != nil {
		return nil, fmt.Errorf("provision: %w", err)
	}
	if spec.Gate != nil {
		return nil, fmt.Errorf("provision %s: %w", spec.SessionID, errGateUnsupported)
	}
	if spec.Hardening.EphemeralStorageBytes > 0 {
		p.ephemeralOnce.Do(func() {
			p.opts.Logger.Warn("docker provider ignores hardening.ephemeral_storage_bytes: the writable-layer quota depends on the storage driver (docs/DIVERGENCES.md)")
		})
	}
	name := sandbox.DockerName(spec.SessionID.String())
	imageReady := false
	// A lost name race (409) or a rebuild sends the loop round again; three
	// rounds means something keeps recreating the name under us.
	for range 3 {
		sb, found, err := p.adoptExisting(ctx, spec, name)
		if err != nil || found {
			return sb, err
		}
		if !imageReady {
			if err := p.ensureImage(ctx, spec.Image); err != nil {
				return nil, err
			}
			imageReady = true
		}
		ncpu, err := p.daemonCPUs(ctx)
		if err != nil {
			return nil, fmt.Errorf("provision %s: %w", spec.SessionID, err)
		}
		cfg, host := containerConfig(spec, ncpu, p.opts.Labels)
		created, err := p.eng.ContainerCreate(ctx, cfg, host, nil, nil, name)
		if cerrdefs.IsConflict(err) {
			continue // another provisioner won the name (C-PROV-4): adopt it
		}
		if err != nil {
			return nil, translate(err, "create "+name)
		}
		if err := p.eng.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
			p.removeQuietly(created.ID)
			return nil, translate(err, "start "+name)
		}
		return p.handle(created.ID, spec), nil
	}
	return nil, fmt.Errorf("provision %s: the container name kept changing hands", spec.SessionID)
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
	decision, err := sandbox.DecideAdoption(spec, observe(c, ""))
	if err != nil {
		return nil, false, fmt.Errorf("provision %s: %w", spec.SessionID, err)
	}
	if decision.Action == sandbox.Rebuild {
		// Only a gate reshape rebuilds, and gated specs are refused above;
		// an existing gated sandbox asked for ungated is rebuilt here.
		if decision.RevokeToken && spec.GateTokenRevoker != nil {
			if err := spec.GateTokenRevoker.Revoke(ctx, spec.SessionID); err != nil {
				return nil, false, fmt.Errorf("provision %s: revoke gate token before rebuild: %w", spec.SessionID, err)
			}
		}
		p.opts.Logger.Info("rebuilding sandbox", "session", spec.SessionID.String(), "reason", decision.Reason)
		return nil, false, p.removeSession(ctx, spec.SessionID.String())
	}
	if c.State == nil || !c.State.Running {
		if err := p.eng.ContainerStart(ctx, c.ID, container.StartOptions{}); err != nil {
			return nil, false, translate(err, "start "+name)
		}
	}
	return p.handle(c.ID, spec), true, nil
}

// checkOwned refuses a container without the session's ownership label.
func checkOwned(c container.InspectResponse, sid string) error {
	if c.Config == nil || c.Config.Labels[sandbox.LabelSession] != sid {
		return fmt.Errorf("%s: %w", c.Name, errForeign)
	}
	return nil
}

// ensureImage pulls ref when the daemon does not have it (C-PROV-6). An
// unpullable image is an error that says so, with the daemon's reason.
func (p *Provider) ensureImage(ctx context.Context, ref string) error {
	_, err := p.eng.ImageInspect(ctx, ref)
	if err == nil {
		return nil
	}
	if !cerrdefs.IsNotFound(err) {
		return translate(err, "inspect image "+ref)
	}
	rc, err := p.eng.ImagePull(ctx, ref, image.PullOptions{})
	if err != nil {
		return fmt.Errorf("image %q is not present and cannot be pulled: %w", ref, err)
	}
	defer func() { _ = rc.Close() }()
	// The pull reports failures inside its progress stream.
	if err := jsonmessage.DisplayJSONMessagesStream(rc, io.Discard, 0, false, nil); err != nil {
		return fmt.Errorf("image %q is not present and cannot be pulled: %w", ref, err)
	}
	return nil
}
