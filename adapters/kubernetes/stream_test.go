package kubernetes

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
)

// scripted is an execer that answers every exec with fixed output and exit
// code, standing in for a sandbox whose stream the cluster cannot be made to
// cut on demand.
type scripted struct {
	stdout, stderr string
	code           int
	err            error
}

func (s scripted) exec(_ context.Context, _, _ string, _ []string, _ io.Reader, stdout, stderr io.Writer) (int, error) {
	_, _ = io.WriteString(stdout, s.stdout)
	_, _ = io.WriteString(stderr, s.stderr)
	return s.code, s.err
}

func scriptedHandle(s scripted) *handle {
	return (&handle{p: &Provider{ex: s}, ns: "default", name: "sandgate-x", uid: "u", workdir: "/workspace"}).withPlane(nil)
}

func TestReadFileStreamVerifiesTheEnd(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	rc, n, err := scriptedHandle(scripted{stdout: "5\nhello"}).ReadFileStream(ctx, "/f", 10)
	require.NoError(t, err)
	require.Equal(t, int64(5), n)
	b, err := io.ReadAll(rc)
	require.NoError(t, err)
	require.Equal(t, "hello", string(b))
	require.NoError(t, rc.Close())

	// Every announced byte arrived, but the script failed afterwards: the
	// end is not clean (B-6).
	rc, _, err = scriptedHandle(scripted{stdout: "5\nhello", code: 1, stderr: "boom"}).ReadFileStream(ctx, "/f", 10)
	require.NoError(t, err)
	_, err = io.ReadAll(rc)
	require.ErrorContains(t, err, "exited 1")
	require.NoError(t, rc.Close())

	// A stream cut short is an error, never a shorter file.
	rc, _, err = scriptedHandle(scripted{stdout: "5\nhel"}).ReadFileStream(ctx, "/f", 10)
	require.NoError(t, err)
	_, err = io.ReadAll(rc)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	require.NoError(t, rc.Close())

	// More than announced is refused too.
	rc, _, err = scriptedHandle(scripted{stdout: "5\nhello!"}).ReadFileStream(ctx, "/f", 10)
	require.NoError(t, err)
	_, err = io.ReadAll(rc)
	require.ErrorContains(t, err, "more bytes than announced")
	require.NoError(t, rc.Close())
}

func TestReadFileStreamSentinels(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, _, err := scriptedHandle(scripted{code: sandbox.ExitFileNotExist}).ReadFileStream(ctx, "/f", 10)
	require.ErrorIs(t, err, sandbox.ErrFileNotExist)
	_, _, err = scriptedHandle(scripted{code: sandbox.ExitFileTooLarge}).ReadFileStream(ctx, "/f", 10)
	require.ErrorIs(t, err, sandbox.ErrFileTooLarge)
	_, _, err = scriptedHandle(scripted{stdout: "99\n"}).ReadFileStream(ctx, "/f", 10)
	require.ErrorIs(t, err, sandbox.ErrFileTooLarge, "a header above maxBytes is refused")
	// The same with an exec still running when the header is refused:
	// closing it cancels it, and that cancellation is not the answer.
	_, _, err = (&handle{p: &Provider{ex: blocking{stdout: "99\n"}}, ns: "default", name: "sandgate-x"}).withPlane(nil).
		ReadFileStream(ctx, "/f", 10)
	require.ErrorIs(t, err, sandbox.ErrFileTooLarge)
	require.NotErrorIs(t, err, context.Canceled)
}

// blocking is an execer that writes stdout and then hangs until its context
// ends, like a read of a FIFO nobody writes: the state a test cannot hold a
// real sandbox in reliably.
type blocking struct{ stdout string }

func (b blocking) exec(ctx context.Context, _, _ string, _ []string, _ io.Reader, stdout, _ io.Writer) (int, error) {
	_, _ = io.WriteString(stdout, b.stdout)
	<-ctx.Done()
	return 0, ctx.Err()
}

// returnsWithin fails the test unless call returns within d, so a hang is
// a failure rather than a test timeout.
func returnsWithin[T any](t *testing.T, d time.Duration, call func() T) T {
	t.Helper()
	got := make(chan T, 1)
	go func() { got <- call() }()
	select {
	case v := <-got:
		return v
	case <-time.After(d):
		t.Fatalf("still blocked after %v", d)
	}
	panic("unreachable")
}

// The caller's context ends a stream that never sends its first byte.
func TestStreamsHonourContextBeforeFirstByte(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	h := (&handle{p: &Provider{ex: blocking{}}, ns: "default", name: "sandgate-x"}).withPlane(nil)
	err := returnsWithin(t, 5*time.Second, func() error {
		_, _, err := h.ReadFileStream(ctx, "/fifo", 10)
		return err
	})
	require.ErrorIs(t, err, context.DeadlineExceeded)

	sid := domain.NewID("ses")
	p, _ := fakeCluster(t, false, existing(t, sandbox.Spec{SessionID: sid, Image: "debian:bookworm"}, "p", corev1.PodRunning))
	p.ex = blocking{}
	ctx, cancel = context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err = returnsWithin(t, 5*time.Second, func() error {
		_, err := p.Export(ctx, sid, "/fifo")
		return err
	})
	require.ErrorIs(t, err, context.DeadlineExceeded)
}
