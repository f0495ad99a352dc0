package testworld

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/netip"
	"testing"

	"github.com/docker/docker/api/types/network"
	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/domain"
)

// createNetwork creates the test's bridge network, with IPv6 when the
// engine allows it on a random ULA prefix (fd00::/8, never a public
// address), and reads its IPv4 gateway. dockertest.Labels removes it.
func (e *Env) createNetwork(t *testing.T) {
	t.Helper()
	ctx, cancel := ctxFor(t)
	defer cancel()
	e.Network = domain.NewID("sgnet").String()
	on := true
	opts := network.CreateOptions{Driver: "bridge", Labels: e.Labels, EnableIPv6: &on,
		IPAM: &network.IPAM{Config: []network.IPAMConfig{{Subnet: randomULA(t)}}}}
	_, err := e.Cli.NetworkCreate(ctx, e.Network, opts)
	if err != nil {
		t.Logf("network without IPv6 (the engine refused it: %v)", err)
		_, err = e.Cli.NetworkCreate(ctx, e.Network, network.CreateOptions{Driver: "bridge", Labels: e.Labels})
	}
	require.NoError(t, err, "create network %s", e.Network)
	ins, err := e.Cli.NetworkInspect(ctx, e.Network, network.InspectOptions{})
	require.NoError(t, err)
	e.IPv6 = ins.EnableIPv6
	for _, c := range ins.IPAM.Config {
		if gw, err := netip.ParseAddr(c.Gateway); err == nil && gw.Is4() {
			e.Gateway = gw
		}
	}
	if !e.Gateway.IsValid() {
		e.Gateway = gatewayFromSubnet(t, ins.IPAM.Config)
	}
}

// gatewayFromSubnet is the first address of the IPv4 subnet, which is what
// Docker's bridge driver uses when the IPAM config does not say.
func gatewayFromSubnet(t *testing.T, cfgs []network.IPAMConfig) netip.Addr {
	t.Helper()
	for _, c := range cfgs {
		if p, err := netip.ParsePrefix(c.Subnet); err == nil && p.Addr().Is4() {
			return p.Masked().Addr().Next()
		}
	}
	require.FailNow(t, "the test network has no IPv4 subnet", "%+v", cfgs)
	return netip.Addr{}
}

func randomULA(t *testing.T) string {
	t.Helper()
	var b [5]byte
	_, err := rand.Read(b[:])
	require.NoError(t, err)
	return fmt.Sprintf("fd%02x:%02x%02x:%02x%02x::/64", b[0], b[1], b[2], b[3], b[4])
}

// removeImage removes an image this environment built.
func (e *Env) removeImage(t *testing.T, ref string) {
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	if _, err := e.Cli.ImageRemove(ctx, ref, imageRemoveOptions()); err != nil {
		t.Errorf("remove image %s: %v", ref, err)
	}
}
