//go:build integration

package docker

import (
	"bytes"
	"context"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"
	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/adapters/docker/dockertest"
	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
)

// smokeImage is made locally by build/images.sh; the test never pulls.
const smokeImage = "debian:bookworm"

// TestSmoke proves the path every later Docker test takes: a labelled
// container from the local image, an exec in it with its output
// demultiplexed and its exit code read, and its removal.
func TestSmoke(t *testing.T) {
	cli := dockertest.Client(t)
	dockertest.RequireImage(t, cli, smokeImage)
	labels := dockertest.Labels(t, cli)
	sid := domain.NewID("ses")
	labels[sandbox.LabelSession] = sid.String()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	created, err := cli.ContainerCreate(ctx,
		&container.Config{Image: smokeImage, Cmd: []string{"sleep", "infinity"}, Labels: labels},
		&container.HostConfig{NetworkMode: "none", Init: ptr(true)},
		nil, nil, ContainerName(sid.String()))
	require.NoError(t, err)
	require.NoError(t, cli.ContainerStart(ctx, created.ID, container.StartOptions{}))

	info, err := cli.ContainerInspect(ctx, created.ID)
	require.NoError(t, err)
	require.Equal(t, sid.String(), info.Config.Labels[sandbox.LabelSession])
	require.True(t, info.State.Running, "container state %q", info.State.Status)

	for _, tc := range []struct {
		cmd            []string
		stdout, stderr string
		exit           int
	}{
		{[]string{"echo", "hello"}, "hello\n", "", 0},
		{[]string{"bash", "-c", "echo out; echo err >&2; exit 3"}, "out\n", "err\n", 3},
	} {
		stdout, stderr, exit := execIn(ctx, t, cli, created.ID, tc.cmd)
		require.Equal(t, tc.stdout, stdout, "stdout of %q", tc.cmd)
		require.Equal(t, tc.stderr, stderr, "stderr of %q", tc.cmd)
		require.Equal(t, tc.exit, exit, "exit code of %q", tc.cmd)
	}

	require.NoError(t, cli.ContainerRemove(ctx, created.ID, container.RemoveOptions{Force: true}))
	_, err = cli.ContainerInspect(ctx, created.ID)
	require.True(t, cerrdefs.IsNotFound(err), "inspect after remove: %v", err)
}

// execIn runs cmd in the container and returns its demultiplexed output and
// exit code.
func execIn(ctx context.Context, t *testing.T, cli *client.Client, id string, cmd []string) (string, string, int) {
	t.Helper()
	ex, err := cli.ContainerExecCreate(ctx, id, container.ExecOptions{Cmd: cmd, AttachStdout: true, AttachStderr: true})
	require.NoError(t, err)
	att, err := cli.ContainerExecAttach(ctx, ex.ID, container.ExecAttachOptions{})
	require.NoError(t, err)
	defer att.Close()
	var stdout, stderr bytes.Buffer
	_, err = stdcopy.StdCopy(&stdout, &stderr, att.Reader)
	require.NoError(t, err)
	// The stream ends as the process exits; the engine may record the exit
	// code a moment later.
	for {
		st, err := cli.ContainerExecInspect(ctx, ex.ID)
		require.NoError(t, err)
		if !st.Running {
			return stdout.String(), stderr.String(), st.ExitCode
		}
		select {
		case <-ctx.Done():
			t.Fatalf("exec %q still running: %v", cmd, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func ptr[T any](v T) *T { return &v }
