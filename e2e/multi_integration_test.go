//go:build integration

package e2e_test

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"
	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/adapters/docker/dockertest"
	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/core/session"
	"github.com/sandgate/sandgate/internal/pgtest"
	"github.com/sandgate/sandgate/internal/testworld"
)

// gateNetwork creates a labelled network for gates and returns its name
// and IPv4 gateway (the host, where executors serve gate configs).
func (w *world) gateNetwork(t *testing.T) (string, netip.Addr) {
	t.Helper()
	name := domain.NewID("sgnet").String()
	_, err := w.cli.NetworkCreate(t.Context(), name, network.CreateOptions{Driver: "bridge", Labels: w.labels})
	require.NoError(t, err)
	ins, err := w.cli.NetworkInspect(t.Context(), name, network.InspectOptions{})
	require.NoError(t, err)
	for _, c := range ins.IPAM.Config {
		if gw, err := netip.ParseAddr(c.Gateway); err == nil && gw.Is4() {
			return name, gw
		}
	}
	t.Fatalf("network %s has no IPv4 gateway: %+v", name, ins.IPAM.Config)
	return "", netip.Addr{}
}

// gatedSettings has an executor run gates on net, serving their config on
// a free port of the gateway.
func gatedSettings(t *testing.T, net string, gw netip.Addr) map[string]string {
	t.Helper()
	addr := freePort(t, gw)
	return map[string]string{"SANDGATE_GATE_IMAGE": gatedImage(), "SANDGATE_GATE_NETWORK": net,
		"SANDGATE_GATE_LISTEN": addr, "SANDGATE_CONTROLPLANE_URL": "http://" + addr}
}

func freePort(t *testing.T, host netip.Addr) string {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(host.String(), "0"))
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// containersOf lists the containers (running or not) of session sid.
func (w *world) containersOf(t *testing.T, sid domain.ID) []container.Summary {
	t.Helper()
	list, err := w.cli.ContainerList(t.Context(), container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", sandbox.LabelSession+"="+sid.String()))})
	require.NoError(t, err)
	return list
}

// TestTwoExecutors: two executor processes on one PostgreSQL and one
// daemon. Concurrent PUTs of one session, split across both, converge on one
// sandbox (and one gate, for a gated session); each sees what the other
// provisioned and deleted.
func TestTwoExecutors(t *testing.T) {
	dbURL := pgtest.Database(t)
	w := newWorld(t)
	dockertest.RequireImage(t, w.cli, gatedImage())
	netName, gw := w.gateNetwork(t)
	procs := make([]*proc, 2)
	for i, name := range []string{"a", "b"} {
		settings := gatedSettings(t, netName, gw)
		settings["SANDGATE_DATABASE_URL"] = dbURL
		procs[i] = w.start(t, name, settings)
	}
	a, b := procs[0].client(t), procs[1].client(t)
	ctx := ctxMinutes(t, 4)

	gated := session.Request{Networking: domain.Networking{Type: domain.NetLimited, AllowedHosts: []string{"api.example.com"}}}
	for _, tc := range []struct {
		name       string
		req        session.Request
		containers int
	}{
		{"ungated", session.Request{}, 1},
		{"gated", gated, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sid := domain.NewID("ses")
			const n = 8
			ids := make([]string, n)
			errs := make([]error, n)
			var wg sync.WaitGroup
			for i := range n {
				c := a
				if i%2 == 1 {
					c = b
				}
				wg.Go(func() {
					info, err := c.Provision(ctx, sid, tc.req)
					ids[i], errs[i] = info.SandboxID, err
				})
			}
			wg.Wait()
			for i := range n {
				require.NoError(t, errs[i], "PUT %d", i)
				require.Equal(t, ids[0], ids[i], "PUT %d converged on the same sandbox", i)
			}
			require.Len(t, w.containersOf(t, sid), tc.containers, "one sandbox (and one gate when gated)")

			for i, c := range procs {
				info, err := c.client(t).Get(ctx, sid)
				require.NoError(t, err, "executor %d finds the session", i)
				require.Equal(t, ids[0], info.SandboxID)
				require.Equal(t, tc.containers == 2, info.Gated)
				res, err := c.client(t).Exec(ctx, sid, sandbox.ExecRequest{Command: fmt.Sprintf("echo from %d", i), Timeout: time.Minute})
				require.NoError(t, err)
				require.Equal(t, fmt.Sprintf("from %d\n", i), res.Stdout)
			}

			require.NoError(t, a.Delete(ctx, sid, false))
			_, err := b.Get(ctx, sid)
			require.ErrorIs(t, err, sandbox.ErrNotFound, "b sees a's delete")
			require.Empty(t, w.containersOf(t, sid))
			list, err := b.List(ctx)
			require.NoError(t, err)
			for _, s := range list {
				require.NotEqual(t, sid, s.ID)
			}
			require.NoError(t, b.Delete(ctx, sid, false), "deleting again from the other executor is a no-op")
		})
	}
}

// gatedImage is the gate image the gated row runs.
func gatedImage() string {
	if image := os.Getenv(testworld.GateImageEnv); image != "" {
		return image
	}
	return testworld.BaseGateImage
}
