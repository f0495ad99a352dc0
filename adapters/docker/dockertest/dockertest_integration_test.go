//go:build integration

package dockertest

import (
	"context"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"
	"github.com/stretchr/testify/require"
)

// TestRemoveLabelled proves the cleanup every integration test relies on:
// everything carrying one test's label goes, containers holding a volume and a
// network included, and nothing of another test's does.
func TestRemoveLabelled(t *testing.T) {
	cli := Client(t)
	RequireImage(t, cli, "busybox:1.35")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	mine, other := Labels(t, cli), Labels(t, cli)
	mineFilter := LabelTest + "=" + mine[LabelTest]

	net, err := cli.NetworkCreate(ctx, "sandgate-test-"+mine[LabelTest], network.CreateOptions{Labels: mine})
	require.NoError(t, err)
	vol, err := cli.VolumeCreate(ctx, volume.CreateOptions{Labels: mine})
	require.NoError(t, err)
	_, err = cli.ContainerCreate(ctx,
		&container.Config{Image: "busybox:1.35", Cmd: []string{"sleep", "3600"}, Labels: mine},
		&container.HostConfig{NetworkMode: container.NetworkMode(net.ID), Binds: []string{vol.Name + ":/data"}},
		nil, nil, "")
	require.NoError(t, err)
	survivor, err := cli.ContainerCreate(ctx,
		&container.Config{Image: "busybox:1.35", Cmd: []string{"true"}, Labels: other}, nil, nil, nil, "")
	require.NoError(t, err)

	require.NoError(t, RemoveLabelled(ctx, cli, mineFilter))
	require.Zero(t, count(ctx, t, cli, mineFilter))
	_, err = cli.ContainerInspect(ctx, survivor.ID)
	require.NoError(t, err, "another test's container must survive")
}

// count returns how many containers, networks and volumes match label.
func count(ctx context.Context, t *testing.T, cli client.APIClient, label string) int {
	t.Helper()
	f := filters.NewArgs(filters.Arg("label", label))
	ctrs, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	require.NoError(t, err)
	nets, err := cli.NetworkList(ctx, network.ListOptions{Filters: f})
	require.NoError(t, err)
	vols, err := cli.VolumeList(ctx, volume.ListOptions{Filters: f})
	require.NoError(t, err)
	return len(ctrs) + len(nets) + len(vols.Volumes)
}

// TestRequireImageMissing proves a missing image is never pulled and ends the
// test: failed under CI, skipped elsewhere.
func TestRequireImageMissing(t *testing.T) {
	cli := Client(t)
	const absent = "sandgate.invalid/absent:never"
	for ci, fails := range map[string]bool{"true": true, "": false} {
		t.Setenv("CI", ci)
		r := record(func(tb testing.TB) { RequireImage(tb, cli, absent) })
		if fails {
			require.Contains(t, r.fatal, "not in the local store")
		} else {
			require.Contains(t, r.skip, "not in the local store")
		}
	}
}
