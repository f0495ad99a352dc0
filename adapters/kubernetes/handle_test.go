package kubernetes

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
)

// hostExec is an execer that runs every exec with the host's bash, in an
// environment holding envPodUID = uid: the pod the name currently points
// at, as the kubelet would give it.
type hostExec struct{ uid string }

func (h hostExec) exec(ctx context.Context, _, _ string, argv []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	c := exec.CommandContext(ctx, argv[0], argv[1:]...)
	c.Env = append(os.Environ(), envPodUID+"="+h.uid)
	c.Stdout, c.Stderr = stdout, stderr
	if stdin != nil {
		// Like the runtime, the copy of stdin is not waited for: Exec's
		// lifeline ends only after the exec returned.
		in, err := c.StdinPipe()
		if err != nil {
			return 0, err
		}
		go func() {
			_, _ = io.Copy(in, stdin)
			_ = in.Close()
		}()
	}
	err := c.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() >= 0 {
		return ee.ExitCode(), nil
	}
	return 0, err
}

// withUIDEnv is pod with the downward-API UID variable on its sandbox
// container, as podFor makes it, and a workdir that exists on the host.
func withUIDEnv(t *testing.T, pod *corev1.Pod) *corev1.Pod {
	pod.Annotations[annotationWorkdir] = t.TempDir()
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == containerSandbox {
			pod.Spec.Containers[i].Env = append(pod.Spec.Containers[i].Env, podUIDEnv)
		}
	}
	return pod
}

// A handle whose pod was replaced by a newer one of the same name must not
// run anything in the newer pod (C-DES-1): every operation is ErrNotFound.
func TestHandleOfReplacedPodIsNotFound(t *testing.T) {
	t.Parallel()
	sid := domain.NewID("ses")
	spec := sandbox.Spec{SessionID: sid, Image: "debian:bookworm"}
	p, _ := fakeCluster(t, false, withUIDEnv(t, existing(t, spec, "old", corev1.PodRunning)))
	p.ex = hostExec{uid: "old"}
	ctx := context.Background()
	sb, err := p.Attach(ctx, sid)
	require.NoError(t, err)
	require.True(t, sb.(*handle).guard, "a pod with the UID variable gets the check")

	// Before the replacement: commands run, and do not see the variable.
	res, err := sb.Exec(ctx, sandbox.ExecRequest{Command: "echo ${" + envPodUID + "-unset}", Timeout: 10 * time.Second})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, "stderr %q", res.Stderr)
	require.Equal(t, "unset\n", res.Stdout)
	res, err = sb.Exec(ctx, sandbox.ExecRequest{Command: "exit 89"})
	require.NoError(t, err)
	require.Equal(t, exitWrongPod, res.ExitCode, "the command's own exit 89 is its result")

	// The pod is replaced: same name, new UID.
	pods := p.cli.CoreV1().Pods("default")
	require.NoError(t, pods.Delete(ctx, PodName(sid.String()), metav1.DeleteOptions{}))
	_, err = pods.Create(ctx, withUIDEnv(t, existing(t, spec, "", corev1.PodRunning)), metav1.CreateOptions{})
	require.NoError(t, err)
	fresh, err := p.Attach(ctx, sid)
	require.NoError(t, err)
	newUID := string(fresh.(*handle).uid)
	require.NotEqual(t, "old", newUID)
	p.ex = hostExec{uid: newUID}

	marker := filepath.Join(t.TempDir(), "ran")
	_, err = sb.Exec(ctx, sandbox.ExecRequest{Command: "touch " + marker, Timeout: 10 * time.Second})
	require.ErrorIs(t, err, sandbox.ErrNotFound)
	_, err = sb.Exec(ctx, sandbox.ExecRequest{Command: "touch " + marker})
	require.ErrorIs(t, err, sandbox.ErrNotFound)
	require.NoFileExists(t, marker, "nothing ran in the newer pod")
	_, err = sb.ReadFile(ctx, "/etc/hostname")
	require.ErrorIs(t, err, sandbox.ErrNotFound)
	_, _, err = sb.ReadFileStream(ctx, "/etc/hostname", 1<<20)
	require.ErrorIs(t, err, sandbox.ErrNotFound)
	require.ErrorIs(t, sb.WriteFile(ctx, marker, []byte("x")), sandbox.ErrNotFound)
	require.NoFileExists(t, marker)

	// The fresh handle works.
	res, err = fresh.Exec(ctx, sandbox.ExecRequest{Command: "echo ok"})
	require.NoError(t, err)
	require.Equal(t, "ok\n", res.Stdout)
}

// lateCtx is a context whose deadline has passed but whose timer has not
// fired yet: the instant in which a connection's own deadline already failed
// a read.
type lateCtx struct{ context.Context }

func (lateCtx) Deadline() (time.Time, bool) { return time.Now().Add(-time.Millisecond), true }

func TestDueCountsAPassedDeadlineBeforeItsTimer(t *testing.T) {
	t.Parallel()
	require.True(t, due(lateCtx{context.Background()}))
	require.False(t, due(context.Background()), "no deadline")
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.False(t, due(c))
	cancel()
	require.True(t, due(c))
}
