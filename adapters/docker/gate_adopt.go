package docker

import (
	"context"
	"fmt"

	"github.com/docker/docker/api/types/container"

	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/ports"
)

// adoptGated adopts a gated sandbox whose pairing DecideAdoption accepted.
// A stopped gate (daemon restart, crash) is restarted in place, keeping the
// sandbox and its workspace (B-8). A gate that cannot be restarted takes its
// sandbox with it: the pair is removed, found is false, and the caller's
// loop builds a new pair — the workspace is lost, which the log says.
func (p *Provider) adoptGated(ctx context.Context, spec sandbox.Spec, c, gate container.InspectResponse) (_ ports.Sandbox, found bool, _ error) {
	sid := spec.SessionID.String()
	if gate.State != nil && gate.State.Running {
		if err := p.ensureRunning(ctx, sid, c); err != nil {
			return nil, false, err
		}
		return p.handle(c.ID, spec, gate.ID, hasAgentMount(c)), true, nil
	}
	err := p.restartPair(ctx, sid, c.ID, gate.ID)
	if err == nil {
		p.opts.Logger.Info("restarted the session's stopped gate in place", "session", sid)
		return p.handle(c.ID, spec, gate.ID, hasAgentMount(c)), true, nil
	}
	if ctx.Err() != nil {
		return nil, false, fmt.Errorf("provision %s: restarting its gate: %w", sid, ctx.Err())
	}
	p.opts.Logger.Warn("the session's gate cannot be restarted: rebuilding sandbox and gate, the workspace is lost",
		"session", sid, "err", err)
	if rmErr := p.removeSession(ctx, sid); rmErr != nil {
		return nil, false, fmt.Errorf("provision %s: its gate cannot be restarted (%w) and removing the pair failed: %w", sid, err, rmErr)
	}
	return nil, false, nil
}

// restartPair starts the stopped gate, waits for it, restarts the sandbox so
// that it joins the gate's new network namespace (the old one died with the
// gate's process), and installs the new gate's CA: a restarted gate mints a
// new one, since its key never leaves its memory.
func (p *Provider) restartPair(ctx context.Context, sid, sandboxID, gateID string) error {
	if err := p.startGate(ctx, gateID); err != nil {
		return err
	}
	p.forgetAgent(sid, sandboxID)
	now := 0
	if err := p.eng.ContainerRestart(ctx, sandboxID, container.StopOptions{Timeout: &now}); err != nil {
		return translate(err, "restart sandbox")
	}
	return p.trustGate(ctx, sandboxID, gateID)
}

// checkImageUser refuses an image whose configured USER is the gate uid
// (B-2). A user given by name is looked up in the image's own /etc/passwd,
// read from a container that is created for it and never started.
func (p *Provider) checkImageUser(ctx context.Context, ref string) error {
	img, err := p.eng.ImageInspect(ctx, ref)
	if err != nil {
		return translate(err, "inspect image "+ref)
	}
	var user string
	if img.Config != nil {
		user = img.Config.User
	}
	if !sandbox.ImageUserIsName(user) {
		return p.imageUserErr(ref, sandbox.CheckImageUser(user, nil))
	}
	probe, err := p.eng.ContainerCreate(ctx, &container.Config{Image: ref, Entrypoint: []string{"sandgate-probe"},
		Labels: p.opts.Labels}, &container.HostConfig{NetworkMode: "none"}, nil, nil, "")
	if err != nil {
		return translate(err, "create a probe of "+ref)
	}
	defer p.removeQuietly(probe.ID)
	passwd, err := p.readFile(ctx, probe.ID, "/etc/passwd", 4<<20)
	if err != nil {
		passwd = nil // no passwd: the runtime cannot resolve the name either
	}
	return p.imageUserErr(ref, sandbox.CheckImageUser(user, passwd))
}

func (p *Provider) imageUserErr(ref string, err error) error {
	if err != nil {
		return fmt.Errorf("gated sandbox from %q: %w", ref, err)
	}
	return nil
}
