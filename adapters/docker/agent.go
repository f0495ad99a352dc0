package docker

import (
	"context"
	"io"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/sandgate/sandgate/adapters/internal/agentclient"
	"github.com/sandgate/sandgate/core/agentwire"
)

// The in-sandbox agent on Docker (issue 13). Its binary reaches every
// sandbox without a per-sandbox copy: a named volume per agent image
// (sandgate-agent-<image id>) is filled from the image once per daemon, by
// starting a throwaway container that mounts it (the daemon copies the
// image's content into an empty volume), and every sandbox created after
// mounts it read-only at agentwire.Dir. The binary keeps the image's owner
// (root) and mode, and the read-only mount means no sandbox user can
// replace it. A sandbox without the mount (the agent disabled, its image
// missing, an adopted container made before) runs everything through
// engine execs, as before: the fallback path, logged once per provider.
const (
	// agentImageDir is where the agent image holds its binary.
	agentImageDir = "/sandgate-agent"
	// agentVolumePrefix names the volumes, followed by the image id.
	agentVolumePrefix = "sandgate-agent-"
	// agentRetry is how long a failed delivery is not tried again.
	agentRetry = 30 * time.Second
)

// agents is a provider's agent state: the delivery volume and one Conn per
// session's sandbox.
type agents struct {
	mu       sync.Mutex
	volume   string
	failedAt time.Time
	logged   bool
	conns    agentclient.Registry // by session, tagged with the container id
}

// agentMount adds the agent volume to a sandbox's mounts when the agent is
// enabled and its volume can be had; otherwise the sandbox uses the
// fallback path.
func (p *Provider) agentMount(ctx context.Context, host *container.HostConfig) {
	vol := p.agentVolume(ctx)
	if vol == "" {
		return
	}
	host.Mounts = append(host.Mounts, mount.Mount{Type: mount.TypeVolume, Source: vol, Target: agentwire.Dir,
		ReadOnly: true, VolumeOptions: &mount.VolumeOptions{NoCopy: true}})
}

// agentVolume is the filled delivery volume's name, or "" (disabled, or
// the delivery failed less than agentRetry ago).
func (p *Provider) agentVolume(ctx context.Context) string {
	if p.opts.AgentImage == "" {
		return ""
	}
	a := &p.agents
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.volume != "" || time.Since(a.failedAt) < agentRetry {
		return a.volume
	}
	vol, err := p.fillAgentVolume(ctx)
	if err != nil {
		a.failedAt = time.Now()
		if !a.logged {
			a.logged = true
			p.opts.Logger.Warn("in-sandbox agent unavailable: sandboxes use engine execs", "image", p.opts.AgentImage, "err", err)
		}
		return ""
	}
	a.volume = vol
	return vol
}

// fillAgentVolume creates the image's volume and has the daemon fill it:
// a container of the agent image that mounts the (empty) volume over the
// binary's directory is started and removed at once.
func (p *Provider) fillAgentVolume(ctx context.Context) (string, error) {
	img, err := p.eng.ImageInspect(ctx, p.opts.AgentImage)
	if err != nil {
		return "", translate(err, "agent image "+p.opts.AgentImage)
	}
	vol := agentVolumePrefix + shortImageID(img.ID)
	if _, err := p.eng.VolumeCreate(ctx, volume.CreateOptions{Name: vol, Labels: map[string]string{labelAgent: img.ID}}); err != nil {
		return "", translate(err, "create volume "+vol)
	}
	labels := map[string]string{labelAgent: img.ID}
	maps.Copy(labels, p.opts.Labels)
	created, err := p.eng.ContainerCreate(ctx,
		&container.Config{Image: img.ID, Cmd: []string{agentImageDir + "/sandgate-agent", "version"}, Labels: labels},
		&container.HostConfig{Mounts: []mount.Mount{{Type: mount.TypeVolume, Source: vol, Target: agentImageDir}}, NetworkMode: "none"},
		nil, nil, "")
	if err != nil {
		return "", translate(err, "create agent filler")
	}
	defer p.removeQuietly(created.ID)
	if err := p.eng.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		return "", translate(err, "start agent filler")
	}
	return vol, nil
}

// labelAgent marks the agent's volumes and filler containers with the
// image id they carry.
const labelAgent = "io.sandgate.agent"

func shortImageID(id string) string {
	id = strings.TrimPrefix(id, "sha256:")
	return id[:min(len(id), 12)]
}

// hasAgentMount reports whether a container was created with the agent.
func hasAgentMount(c container.InspectResponse) bool {
	for _, m := range c.Mounts {
		if m.Destination == agentwire.Dir {
			return true
		}
	}
	return false
}

// Close stops every agent this provider started (their streams end, so
// each agent kills what it still runs and exits). The provider stays
// usable: a later call starts a new agent.
func (p *Provider) Close() error {
	p.agents.conns.Close()
	return nil
}

// openAgent starts the agent in container id with one exec whose stdin and
// stdout carry the session; stderr (the agent's own log) is dropped.
func (p *Provider) openAgent(id, workdir string) agentclient.Opener {
	argv, hello := agentclient.Launch(p.opts.AgentKey, id)
	return func(ctx context.Context) (io.ReadWriteCloser, error) {
		created, err := p.eng.ContainerExecCreate(ctx, id, container.ExecOptions{
			Cmd: argv, WorkingDir: workdir, AttachStdin: true, AttachStdout: true, AttachStderr: true,
		})
		if err != nil {
			return nil, execErr(err)
		}
		// The attach outlives this call's context: it is the agent's life.
		hij, err := p.eng.ContainerExecAttach(context.WithoutCancel(ctx), created.ID, container.ExecAttachOptions{})
		if err != nil {
			return nil, execErr(err)
		}
		if _, err := io.WriteString(hij.Conn, hello); err != nil {
			hij.Close()
			return nil, execErr(err)
		}
		pr, pw := io.Pipe()
		go func() {
			_, err := stdcopy.StdCopy(pw, io.Discard, hij.Reader)
			_ = pw.CloseWithError(err)
		}()
		return &agentStream{r: pr, hij: &hijacked{resp: hij}}, nil
	}
}

// agentStream is the agent's exec as one stream: reads are its stdout
// (demultiplexed), writes its stdin.
type agentStream struct {
	r   *io.PipeReader
	hij *hijacked
}

func (s *agentStream) Read(b []byte) (int, error)  { return s.r.Read(b) }
func (s *agentStream) Write(b []byte) (int, error) { return s.hij.resp.Conn.Write(b) }
func (s *agentStream) Close() error {
	s.hij.Close()
	return s.r.Close()
}

// lost answers a call whose agent stream was lost: ErrNotFound when the
// sandbox went away under it (C-EXEC-5), like the fallback's.
func (s *handle) lost(ctx context.Context, err error) error {
	if s.lostSandbox(ctx, err, 0, time.Time{}) {
		return errGone
	}
	return err
}

// runCode runs argv with an engine exec and returns its exit code (the
// agent's backstop, agentclient.Runner).
func (s *handle) runCode(ctx context.Context, argv []string) (int, error) {
	code, _, err := s.runScript(ctx, argv, nil, nil)
	return code, err
}

// mountsAgent reports whether a sandbox's host config mounts the agent.
func mountsAgent(host *container.HostConfig) bool {
	for _, m := range host.Mounts {
		if m.Target == agentwire.Dir {
			return true
		}
	}
	return false
}
