package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sandgate/sandgate/adapters/internal/agentclient"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/ports"
)

// handle is ports.Sandbox for one pod (by name and UID: a newer pod of the
// same session is a different sandbox, C-DES-1).
type handle struct {
	p       *Provider
	ns      string
	name    string
	uid     types.UID
	sid     string // the pod's session label
	workdir string
	// guard: the pod's sandbox container carries its UID in envPodUID, so
	// every exec checks it is still in the handle's pod (podGuard).
	guard bool
	// Plane carries Exec and the file operations: over the pod's agent, or
	// its fallback, scripts (execs of the core's scripts).
	agentclient.Plane
}

var _ ports.Sandbox = (*handle)(nil)

func (p *Provider) handle(pod *corev1.Pod, workdir string) *handle {
	h := &handle{p: p, ns: pod.Namespace, name: pod.Name, uid: pod.UID, sid: pod.Labels[sandbox.LabelSession],
		workdir: workdir, guard: hasUIDEnv(pod)}
	var conn *agentclient.Conn
	if hasAgent(pod) {
		conn = p.agents.Get(h.sid, string(pod.UID), h.openAgent)
	}
	return h.withPlane(conn)
}

// withPlane sets h's data plane: over conn, the pod's agent, or the
// fallback when conn is nil.
func (h *handle) withPlane(conn *agentclient.Conn) *handle {
	h.Plane = agentclient.Plane{Conn: conn, Fallback: scripts{h, agentclient.MetaScripts{Run: h.run}}, Lost: h.lost, Workdir: h.workdir, BulkRoot: h.workdir,
		KillGroup: agentclient.KillGroupVia(h.runCode), GroupAlive: agentclient.GroupAliveVia(h.runCode),
		Observe: h.p.opts.ObserveDataPlane}
	return h
}

// scripts is a handle's fallback data plane (exec.go, files.go, stream.go;
// stat, list, remove and mkdir are the shared MetaScripts on run, which win
// over the handle's own Plane methods by being shallower).
type scripts struct {
	*handle
	agentclient.MetaScripts
}

// envPodUID is the sandbox container's environment variable holding its
// pod's UID, from the downward API (podUIDEnv). An exec addresses a pod by
// name only, so without it a handle whose pod was replaced would run its
// commands in the replacement.
const envPodUID = "SANDGATE_POD_UID"

// podUIDEnv is the env entry the sandbox container needs for the check; it
// goes last, after the spec's env, so that it wins over a same-named one.
var podUIDEnv = corev1.EnvVar{Name: envPodUID, ValueFrom: &corev1.EnvVarSource{
	FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.uid"}}}

// hasUIDEnv reports whether pod's sandbox container carries podUIDEnv (pods
// made before it was added do not, and their handles check nothing).
func hasUIDEnv(pod *corev1.Pod) bool {
	for _, c := range pod.Spec.Containers {
		if c.Name != containerSandbox {
			continue
		}
		for _, e := range c.Env {
			if e.Name == envPodUID && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil &&
				e.ValueFrom.FieldRef.FieldPath == "metadata.uid" {
				return true
			}
		}
	}
	return false
}

// exitWrongPod is podGuard's exit status when the exec landed in a pod that
// is not the handle's. A command can exit with it too, so it only prompts
// the API check (gone) that decides.
const exitWrongPod = 89

// podGuard runs its arguments after the first (the handle's UID) only when
// that UID is the pod's, without envPodUID in their environment; exec keeps
// the pid, so the relay or script it runs is still the exec's main process.
var podGuard = `[ "${` + envPodUID + `-}" = "$1" ] || exit ` + strconv.Itoa(exitWrongPod) + `
unset ` + envPodUID + `
shift
exec "$@"`

// exec runs argv in the handle's pod through the provider's execer, under
// podGuard when the pod carries its UID: an exec that landed in a newer pod
// of the same name is sandbox.ErrNotFound, and nothing of argv ran there.
func (s *handle) exec(ctx context.Context, argv []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	if s.guard {
		argv = append([]string{"/bin/bash", "-c", podGuard, "sandgate-pod", string(s.uid)}, argv...)
	}
	code, err := s.p.ex.exec(ctx, s.ns, s.name, argv, stdin, stdout, stderr)
	if err == nil && s.guard && code == exitWrongPod && s.gone(ctx) {
		return 0, fmt.Errorf("kubernetes exec: sandbox pod %s was replaced: %w", s.name, sandbox.ErrNotFound)
	}
	return code, err
}

// ID implements ports.Sandbox: the pod name.
func (s *handle) ID() string { return s.name }

// Destroy implements ports.Sandbox: deletes this pod (not a newer one of the
// same session, thanks to the UID precondition) and waits until it is gone.
func (s *handle) Destroy(ctx context.Context) error {
	s.p.agents.Forget(s.sid, string(s.uid))
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: s.name, UID: s.uid}}
	return s.p.deletePod(ctx, pod)
}

// run runs argv in the sandbox container: stdin (nil for none) copied in,
// stdout to out (nil discards), stderr kept capped for classification. A
// transport failure on a pod that is gone — or no longer the handle's, or no
// longer running — is sandbox.ErrNotFound (C-EXEC-5).
func (s *handle) run(ctx context.Context, argv []string, stdin io.Reader, out io.Writer) (code int, stderr string, err error) {
	if out == nil {
		out = io.Discard
	}
	errBuf := sandbox.NewCapture(64 << 10)
	code, err = s.exec(ctx, argv, stdin, out, errBuf)
	if err != nil {
		return 0, "", s.execErr(ctx, err)
	}
	return code, errBuf.String(), nil
}

// execErr explains a failed exec: the caller's context, a pod that is gone
// (ErrNotFound), or the transport's own error.
func (s *handle) execErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("kubernetes exec: %w", ctx.Err())
	}
	if errors.Is(err, sandbox.ErrNotFound) {
		return err // exec's own verdict: the pod was replaced
	}
	if s.gone(ctx) {
		return fmt.Errorf("kubernetes exec: sandbox pod %s is gone: %w", s.name, sandbox.ErrNotFound)
	}
	return translate(err, "exec in "+s.name)
}

// gone reports whether the handle's pod no longer exists, was replaced, or
// is not running any more.
func (s *handle) gone(ctx context.Context) bool {
	pod, err := s.p.cli.CoreV1().Pods(s.ns).Get(ctx, s.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return true
	}
	if err != nil {
		return false
	}
	return pod.UID != s.uid || pod.DeletionTimestamp != nil || pod.Status.Phase != corev1.PodRunning
}
