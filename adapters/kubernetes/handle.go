package kubernetes

import (
	"context"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/ports"
)

// handle is ports.Sandbox for one pod (by name and UID: a newer pod of the
// same session is a different sandbox).
type handle struct {
	p       *Provider
	ns      string
	name    string
	uid     types.UID
	workdir string
}

var _ ports.Sandbox = (*handle)(nil)

func (p *Provider) handle(pod *corev1.Pod, workdir string) *handle {
	return &handle{p: p, ns: pod.Namespace, name: pod.Name, uid: pod.UID, workdir: workdir}
}

// ID implements ports.Sandbox: the pod name.
func (s *handle) ID() string { return s.name }

// Destroy implements ports.Sandbox: deletes this pod (not a newer one of the
// same session, thanks to the UID precondition) and waits until it is gone.
func (s *handle) Destroy(ctx context.Context) error {
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
	code, err = s.p.ex.exec(ctx, s.ns, s.name, argv, stdin, out, errBuf)
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
