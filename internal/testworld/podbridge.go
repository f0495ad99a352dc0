package testworld

import (
	"net"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// PodBridgeEnv names the test cluster's pod bridge when it is not
// build/k8s's default, k8slite0.
const PodBridgeEnv = "SANDGATE_TEST_K8S_BRIDGE"

// PodBridgeAddr is the IPv4 address of the test cluster's pod bridge on the
// host: where sandbox pods (and their gates) reach the host, so where a
// Kubernetes test's control plane listens. build/k8s/up.sh creates it
// before the first pod.
func PodBridgeAddr(t *testing.T) string {
	t.Helper()
	name := os.Getenv(PodBridgeEnv)
	if name == "" {
		name = "k8slite0"
	}
	ifc, err := net.InterfaceByName(name)
	require.NoError(t, err, "the pod bridge %s (%s names another)", name, PodBridgeEnv)
	addrs, err := ifc.Addrs()
	require.NoError(t, err)
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	require.FailNow(t, "the pod bridge has no IPv4 address", "%s: %v", name, addrs)
	return ""
}
