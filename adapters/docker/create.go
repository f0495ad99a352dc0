package docker

import (
	"context"
	"fmt"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"

	"github.com/sandgate/sandgate/core/sandbox"
)

// sandboxShell is what every sandbox runs: the keep-alive and every
// in-sandbox script are bash (sandbox.KeepAliveArgv).
const sandboxShell = "/bin/bash"

// createSandbox creates (does not start) the sandbox container name and
// checks that it can run before anything starts it: the image must have
// /bin/bash, or the keep-alive would exit at once with 127 while the
// create looked successful (issue 11). Refused creates leave nothing
// behind. errNameTaken when another provisioner holds the name.
func (p *Provider) createSandbox(ctx context.Context, spec sandbox.Spec, name string, cfg *container.Config, host *container.HostConfig) (string, error) {
	p.agentMount(ctx, host)
	created, err := p.eng.ContainerCreate(ctx, cfg, host, nil, nil, name)
	switch {
	case cerrdefs.IsConflict(err):
		return "", errNameTaken
	case err != nil && strings.Contains(err.Error(), "not a directory"):
		// The daemon makes the working directory at create and says
		// "Cannot mkdir: <workdir> is not a directory" when the image has a
		// file there (or on its way).
		return "", fmt.Errorf("provision %s: workdir %q: a file in image %q is in its way: %w",
			spec.SessionID, spec.Workdir, spec.Image, sandbox.ErrInvalidWorkdir)
	case err != nil:
		return "", translate(err, "create "+name)
	}
	if err := p.checkShell(ctx, created.ID, spec); err != nil {
		p.removeQuietly(created.ID)
		return "", err
	}
	return created.ID, nil
}

// checkShell refuses a created sandbox whose image has no /bin/bash. One
// stat through the archive endpoint, which reads a created container's
// filesystem without running anything (a link is fine: its target is
// what runs, and a dangling one fails at the first exec).
func (p *Provider) checkShell(ctx context.Context, id string, spec sandbox.Spec) error {
	st, err := p.eng.ContainerStatPath(ctx, id, sandboxShell)
	switch {
	case cerrdefs.IsNotFound(err):
		return fmt.Errorf("provision %s: image %q has no %s, which every sandbox runs: %w",
			spec.SessionID, spec.Image, sandboxShell, sandbox.ErrImageUnusable)
	case err != nil:
		return translate(err, "stat "+sandboxShell)
	case st.Mode.IsDir():
		return fmt.Errorf("provision %s: image %q: %s is a directory: %w",
			spec.SessionID, spec.Image, sandboxShell, sandbox.ErrImageUnusable)
	}
	return nil
}
