// Package dockertest gives integration tests a client for a real Docker engine
// and cleans up after them. A test that cannot reach its engine or image fails
// under CI=true and is skipped, with the reason, everywhere else: CI must never
// go green by skipping, while a laptop without Docker can still run the unit
// suite. Images are never pulled; build/images.sh makes them locally.
package dockertest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"

	"github.com/sandgate/sandgate/core/domain"
)

// LabelTest marks every container, network and volume a test creates. Its
// value is unique per test (see Labels), so the cleanup of one test never
// removes what a test running in parallel, in another package, still uses.
const LabelTest = "dev.sandgate.test"

// pingTimeout bounds how long Client waits for an engine that may be down.
const pingTimeout = 10 * time.Second

// Client returns a client for the engine the environment names (DOCKER_HOST
// and friends, as the docker CLI reads them), negotiated down to the engine's
// API version, and closes it when the test ends. Without a reachable engine
// the test fails under CI=true and is skipped otherwise.
func Client(tb testing.TB) *client.Client {
	tb.Helper()
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		unavailable(tb, "docker client: %v", err)
		return nil
	}
	tb.Cleanup(func() { _ = cli.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), pingTimeout)
	defer cancel()
	if _, err := cli.Ping(ctx); err != nil {
		unavailable(tb, "no Docker engine answers at %s (run build/ensure-docker.sh): %v", cli.DaemonHost(), err)
		return nil
	}
	return cli
}

// RequireImage checks that ref exists in the engine's local store. It never
// pulls: a missing image fails the test under CI=true and skips it otherwise,
// naming the script that builds it.
func RequireImage(tb testing.TB, cli client.ImageAPIClient, ref string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), pingTimeout)
	defer cancel()
	if _, err := cli.ImageInspect(ctx, ref); err != nil {
		unavailable(tb, "image %s is not in the local store (run build/images.sh): %v", ref, err)
	}
}

// AgentImage is the in-sandbox agent's image the tests run sandboxes with:
// $SANDGATE_TEST_AGENT_IMAGE, else sandgate/agent:dev (`make agent-image`).
// Missing, it fails under CI=true and skips otherwise, like RequireImage.
func AgentImage(tb testing.TB, cli client.ImageAPIClient) string {
	tb.Helper()
	ref := os.Getenv("SANDGATE_TEST_AGENT_IMAGE")
	if ref == "" {
		ref = "sandgate/agent:dev"
	}
	ctx, cancel := context.WithTimeout(context.Background(), pingTimeout)
	defer cancel()
	if _, err := cli.ImageInspect(ctx, ref); err != nil {
		unavailable(tb, "agent image %s is not in the local store (run make agent-image): %v", ref, err)
	}
	return ref
}

// Labels returns the labels every object of this test must carry — LabelTest
// with a value unique to this test — and registers a cleanup that removes
// every container, network and volume carrying them, whatever the test did
// before it ended (it may have crashed half-way). The caller may add its own
// labels to the returned map.
func Labels(tb testing.TB, cli client.APIClient) map[string]string {
	tb.Helper()
	value := domain.NewID("test").String()
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := RemoveLabelled(ctx, cli, LabelTest+"="+value); err != nil {
			tb.Errorf("cleanup of %s=%s: %v", LabelTest, value, err)
		}
	})
	return map[string]string{LabelTest: value}
}

// RemoveLabelled force-removes every container (with its anonymous volumes),
// then every network and volume, matching the label filter ("key" or
// "key=value"). Containers go first because they hold the others. It returns
// every failure joined, after trying them all.
func RemoveLabelled(ctx context.Context, cli client.APIClient, label string) error {
	f := filters.NewArgs(filters.Arg("label", label))
	var errs []error
	ctrs, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	errs = append(errs, err)
	for _, c := range ctrs {
		errs = append(errs, cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true}))
	}
	nets, err := cli.NetworkList(ctx, network.ListOptions{Filters: f})
	errs = append(errs, err)
	for _, n := range nets {
		errs = append(errs, cli.NetworkRemove(ctx, n.ID))
	}
	vols, err := cli.VolumeList(ctx, volume.ListOptions{Filters: f})
	errs = append(errs, err)
	for _, v := range vols.Volumes {
		errs = append(errs, cli.VolumeRemove(ctx, v.Name, true))
	}
	return errors.Join(errs...)
}

// unavailable ends a test whose infrastructure is missing: Fatal under CI
// (CI=true or any other true value strconv.ParseBool accepts), Skip elsewhere.
func unavailable(tb testing.TB, format string, args ...any) {
	tb.Helper()
	msg := fmt.Sprintf(format, args...)
	if ci, _ := strconv.ParseBool(os.Getenv("CI")); ci {
		tb.Fatalf("%s (CI=true: integration infrastructure is required)", msg)
		return
	}
	tb.Skipf("%s (skipped outside CI)", msg)
}
