package docker

import (
	"context"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/ports"
)

// Attach implements ports.Provider: read-only, it never starts, pulls or
// heals anything (C-ATT-1).
func (p *Provider) Attach(ctx context.Context, sid domain.ID) (ports.Sandbox, error) {
	p.negotiate(ctx)
	if err := sid.Required(); err != nil {
		return nil, fmt.Errorf("attach: session_id: %w", err)
	}
	c, err := p.inspectOwned(ctx, sid)
	if err != nil {
		return nil, err
	}
	if c.State == nil || !c.State.Running {
		return nil, fmt.Errorf("attach %s: sandbox is not running: %w", sid, sandbox.ErrNotFound)
	}
	spec := sandbox.Spec{SessionID: sid, Workdir: c.Config.WorkingDir, Image: c.Config.Image}
	return p.handle(c.ID, spec, observe(c, "").PairedGate, hasAgentMount(c)), nil
}

// inspectOwned inspects the session's sandbox container, refusing a foreign
// holder of the name (C-PROV-5).
func (p *Provider) inspectOwned(ctx context.Context, sid domain.ID) (container.InspectResponse, error) {
	name := ContainerName(sid.String())
	c, err := p.eng.ContainerInspect(ctx, name)
	if err != nil {
		return container.InspectResponse{}, translate(err, "inspect "+name)
	}
	if err := checkOwned(c, sid.String()); err != nil {
		return container.InspectResponse{}, err
	}
	return c, nil
}

// Owned implements ports.Provider: the distinct session ids on every
// labelled container that also carries Options.Labels, running or stopped.
// A label value that is not a valid session id (someone else's container)
// is skipped.
func (p *Provider) Owned(ctx context.Context) ([]domain.ID, error) {
	p.negotiate(ctx)
	f := filters.NewArgs(filters.Arg("label", sandbox.LabelSession))
	for k, v := range p.opts.Labels {
		f.Add("label", k+"="+v)
	}
	list, err := p.eng.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		return nil, translate(err, "list")
	}
	var ids []domain.ID
	for _, c := range list {
		id, err := domain.ParseSessionID(c.Labels[sandbox.LabelSession])
		if err == nil && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// Reap implements ports.Provider (C-REAP-1): revoke first, then remove every
// labelled asset, sandbox before gate, and wait until they are gone. It is
// the one owner of revoke-before-reap (ports.Provider.Reap).
func (p *Provider) Reap(ctx context.Context, sid domain.ID) error {
	p.negotiate(ctx)
	if err := sid.Required(); err != nil {
		return fmt.Errorf("reap: session_id: %w", err)
	}
	if p.opts.Tokens != nil {
		if err := p.opts.Tokens.Revoke(ctx, sid); err != nil {
			return fmt.Errorf("reap %s: revoke gate token (nothing removed): %w", sid, err)
		}
	}
	return p.removeSession(ctx, sid.String())
}

// removeSession removes every container labelled with sid — sandboxes
// before gates, anonymous volumes with them — and waits until the list is
// empty, bounded by RemoveTimeout.
func (p *Provider) removeSession(ctx context.Context, sid string) error {
	p.agents.conns.Forget(sid, "")
	f := filters.NewArgs(filters.Arg("label", sandbox.LabelSession+"="+sid))
	list, err := p.eng.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		return translate(err, "list "+sid)
	}
	slices.SortStableFunc(list, func(a, b container.Summary) int {
		return boolInt(a.Labels[labelRole] == roleGate) - boolInt(b.Labels[labelRole] == roleGate)
	})
	for _, c := range list {
		if err := p.remove(ctx, c.ID); err != nil {
			return err
		}
		p.swept.Delete(c.ID)
	}
	return p.waitGone(ctx, func(ctx context.Context) (bool, error) {
		left, err := p.eng.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
		return len(left) == 0, translate(err, "list "+sid)
	})
}

// remove force-removes one container with its anonymous volumes. Gone
// already is success; a removal already in progress is waited out by the
// caller's waitGone.
func (p *Provider) remove(ctx context.Context, id string) error {
	err := p.eng.ContainerRemove(ctx, id, container.RemoveOptions{Force: true, RemoveVolumes: true})
	switch {
	case err == nil, cerrdefs.IsNotFound(err):
		return nil
	case cerrdefs.IsConflict(err) && strings.Contains(err.Error(), "in progress"):
		return nil
	}
	return translate(err, "remove "+id)
}

// removeQuietly is the cleanup of a failed create: best effort, on a fresh
// context so a cancelled caller still leaves nothing behind.
func (p *Provider) removeQuietly(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), p.opts.RemoveTimeout)
	defer cancel()
	if err := p.remove(ctx, id); err != nil {
		p.opts.Logger.Warn("cleanup of a failed create", "container", id, "err", err)
	}
}

// waitGone polls gone until it reports true, bounded by RemoveTimeout.
func (p *Provider) waitGone(ctx context.Context, gone func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, p.opts.RemoveTimeout)
	defer cancel()
	for delay := 10 * time.Millisecond; ; delay = min(2*delay, 500*time.Millisecond) {
		ok, err := gone(ctx)
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for removal: %w", ctx.Err())
		case <-time.After(delay):
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Export implements ports.Provider through the archive endpoint, which also
// reads a stopped container (C-EXP-1, C-EXP-2).
func (p *Provider) Export(ctx context.Context, sid domain.ID, root string) (io.ReadCloser, error) {
	p.negotiate(ctx)
	if err := sid.Required(); err != nil {
		return nil, fmt.Errorf("export: session_id: %w", err)
	}
	if err := validateExportRoot(root); err != nil {
		return nil, err
	}
	c, err := p.inspectOwned(ctx, sid)
	if err != nil {
		return nil, err
	}
	rc, _, err := p.eng.CopyFromContainer(ctx, c.ID, root)
	if cerrdefs.IsNotFound(err) {
		// The container was just inspected: a 404 now is the path, unless
		// the container went away in between.
		if _, ierr := p.eng.ContainerInspect(ctx, c.ID); cerrdefs.IsNotFound(ierr) {
			return nil, fmt.Errorf("export %s: %w", sid, errGone)
		}
		return nil, fmt.Errorf("export %s %q: %w", sid, root, sandbox.ErrFileNotExist)
	}
	if err != nil && strings.Contains(err.Error(), "not a directory") {
		// The daemon's lstat met a file on the root's way (ENOTDIR); its
		// message names the host's path, so it is not repeated.
		return nil, fmt.Errorf("export %s %q: %w", sid, root, sandbox.ErrNotDirectory)
	}
	if err != nil {
		return nil, translate(err, "export "+root)
	}
	return sandbox.NewTarGuard(rc), nil
}

// validateExportRoot: absolute, clean, not "/" (whose base name is no
// directory name), no NUL.
func validateExportRoot(root string) error {
	if !strings.HasPrefix(root, "/") || path.Clean(root) != root || root == "/" || strings.IndexByte(root, 0) >= 0 {
		return fmt.Errorf("export root %q: must be an absolute, clean path other than /", root)
	}
	return nil
}
