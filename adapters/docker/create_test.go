package docker

import (
	"context"
	"errors"
	"fmt"
	"testing"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/sandbox"
)

// An image without /bin/bash is refused before its sandbox starts, and the
// created container is removed (issue 11: it was reported running while
// its keep-alive had exited 127).
func TestProvisionRefusesImageWithoutBash(t *testing.T) {
	t.Parallel()
	f := newFakeEngine()
	f.noBash = true
	_, err := fakeProvider(f).Provision(context.Background(), spec("ses_a"))
	require.ErrorIs(t, err, sandbox.ErrImageUnusable)
	require.ErrorContains(t, err, "/bin/bash")
	require.Empty(t, f.containers, "the created container is removed")
	require.NotContains(t, f.calls, "start c1", "never started")
}

// The daemon's create-time refusals of a workdir and of an image reference
// become the core's sentinels.
func TestProvisionClassifiesCreateAndImageErrors(t *testing.T) {
	t.Parallel()
	f := newFakeEngine()
	f.onCreate = func(string) error {
		return fmt.Errorf("Cannot mkdir: /etc/passwd is not a directory: %w", cerrdefs.ErrUnknown)
	}
	s := spec("ses_a")
	s.Workdir = "/etc/passwd"
	_, err := fakeProvider(f).Provision(context.Background(), s)
	require.ErrorIs(t, err, sandbox.ErrInvalidWorkdir)

	for _, inspectErr := range []error{
		fmt.Errorf("invalid reference format: %w", cerrdefs.ErrInvalidArgument),
		context.Canceled,
	} {
		p := newProvider(&badImageEngine{fakeEngine: newFakeEngine(), err: inspectErr}, Options{})
		_, err = p.Provision(context.Background(), spec("ses_a"))
		if errors.Is(inspectErr, context.Canceled) {
			require.ErrorIs(t, err, context.Canceled)
			require.NotErrorIs(t, err, sandbox.ErrImageUnavailable, "a cancelled caller is not the image's fault")
			continue
		}
		require.ErrorIs(t, err, sandbox.ErrImageUnavailable)
	}
}

// badImageEngine answers every image inspect with err.
type badImageEngine struct {
	*fakeEngine
	err error
}

func (b *badImageEngine) ImageInspect(context.Context, string, ...client.ImageInspectOption) (image.InspectResponse, error) {
	return image.InspectResponse{}, b.err
}

// Daemon messages lose the host's paths; the errdefs class survives.
func TestTranslateScrubsHostPaths(t *testing.T) {
	t.Parallel()
	raw := fmt.Errorf("lstat /var/lib/docker/overlay2/0123abc/merged/etc/passwd/x: not a directory: %w", cerrdefs.ErrInternal)
	err := translate(raw, "export")
	require.EqualError(t, err, "docker export: lstat /etc/passwd/x: not a directory: internal")
	require.True(t, cerrdefs.IsInternal(err))
	require.Equal(t, "open <docker-data>: denied", scrubHostPaths("open /var/lib/docker/volumes/v/_data: denied"))
	require.Equal(t, "stat /: x", scrubHostPaths("stat /data/docker/overlay2/id/merged: x"))
}
