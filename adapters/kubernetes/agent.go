package kubernetes

import (
	"context"
	"errors"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/sandgate/sandgate/adapters/internal/agentclient"
	"github.com/sandgate/sandgate/core/agentwire"
	"github.com/sandgate/sandgate/core/sandbox"
)

// The in-sandbox agent on Kubernetes (issue 13). An init container of the
// agent image copies its binary (`sandgate-agent install DIR`, the binary
// copying itself: the image has no shell) into an emptyDir, which the
// sandbox container mounts read-only at agentwire.Dir. The init step runs
// as root with no capability, so the binary is root's and, the mount
// being read-only, no sandbox user can replace it. Image volumes would
// save the copy, but need a runtime that supports them; the copy works on
// every cluster. A pod without the volume (the agent disabled, a pod made
// before) uses the fallback path.
const (
	volAgent       = "sandgate-agent"
	containerAgent = "agent-install"
)

// withAgent adds the install step and the read-only mount to pod.
func withAgent(pod *corev1.Pod, image string) {
	root := int64(0)
	no := false
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: volAgent,
		VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	pod.Spec.InitContainers = append(pod.Spec.InitContainers, corev1.Container{
		Name:            containerAgent,
		Image:           image,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Command:         []string{agentImageBinary, "install", agentwire.Dir},
		VolumeMounts:    []corev1.VolumeMount{{Name: volAgent, MountPath: agentwire.Dir}},
		SecurityContext: &corev1.SecurityContext{
			RunAsUser:                &root,
			AllowPrivilegeEscalation: &no,
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		},
	})
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == containerSandbox {
			pod.Spec.Containers[i].VolumeMounts = append(pod.Spec.Containers[i].VolumeMounts,
				corev1.VolumeMount{Name: volAgent, MountPath: agentwire.Dir, ReadOnly: true})
		}
	}
}

// agentImageBinary is the binary's path in the agent image.
const agentImageBinary = "/sandgate-agent/sandgate-agent"

// hasAgent reports whether pod's sandbox container mounts the agent.
func hasAgent(pod *corev1.Pod) bool {
	for _, c := range pod.Spec.Containers {
		if c.Name != containerSandbox {
			continue
		}
		for _, m := range c.VolumeMounts {
			if m.Name == volAgent && m.MountPath == agentwire.Dir {
				return true
			}
		}
	}
	return false
}

// openAgent starts the handle's agent with one exec (WebSocket, like every
// exec) whose stdin and stdout carry the session, under the pod guard: a
// re-open never lands in a replacement pod. stderr (the agent's log) is
// dropped. The exec lives until the stream is closed.
func (s *handle) openAgent(context.Context) (io.ReadWriteCloser, error) {
	ctx, cancel := context.WithCancel(context.Background())
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		argv, hello := agentclient.Launch(s.p.opts.AgentKey, string(s.uid))
		_, err := s.exec(ctx, argv, io.MultiReader(strings.NewReader(hello), inR), outW, io.Discard)
		if err == nil {
			err = errors.New("agent exited")
		}
		_ = outW.CloseWithError(err)
		_ = inR.CloseWithError(err)
	}()
	return &agentStream{r: outR, w: inW, cancel: cancel, done: done}, nil
}

// agentStream is the agent's exec as one stream.
type agentStream struct {
	r      *io.PipeReader
	w      *io.PipeWriter
	cancel context.CancelFunc
	done   <-chan struct{}
}

// agentExitWait bounds Close's wait for the agent to exit on its own once
// its stdin has ended: an exec that ends that way is closed by the API
// server, which also ends client-go's heartbeat for it (a stream cut from
// this side leaves that goroutine until its next ping, 5 s later).
const agentExitWait = 2 * time.Second

func (a *agentStream) Read(b []byte) (int, error)  { return a.r.Read(b) }
func (a *agentStream) Write(b []byte) (int, error) { return a.w.Write(b) }
func (a *agentStream) Close() error {
	_ = a.w.Close() // stdin's end stops the agent
	select {
	case <-a.done:
	case <-time.After(agentExitWait):
	}
	a.cancel()
	return a.r.Close()
}

// lost answers a call whose agent stream was lost: ErrNotFound when the
// pod went away under it (C-EXEC-5), like the fallback's.
func (s *handle) lost(ctx context.Context, err error) error {
	if ctx.Err() == nil && s.gone(ctx) {
		return errors.Join(sandbox.ErrNotFound, err)
	}
	return err
}

// runCode runs argv with an exec and returns its exit code (the agent's
// backstop, agentclient.Runner).
func (s *handle) runCode(ctx context.Context, argv []string) (int, error) {
	code, _, err := s.run(ctx, argv, nil, nil)
	return code, err
}

// Close stops every agent this provider started. The provider stays
// usable: a later call starts a new agent.
func (p *Provider) Close() error {
	p.agents.Close()
	return nil
}
