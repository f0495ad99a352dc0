package firewall

import (
	"errors"
	"fmt"
	"os"

	"github.com/coreos/go-iptables/iptables"
)

// ifInet6 lists the IPv6 addresses of this network namespace; it exists
// whenever the kernel has IPv6 at all. The namespace's disable_ipv6
// switches are no evidence either way: Docker shows "all" as 1 in a
// container whose eth0 still carries a global IPv6 address.
const ifInet6 = "/proc/net/if_inet6"

// lockWait is how long, in seconds, an iptables call waits for the xtables
// lock another process (Docker, a second gate start) may hold.
const lockWait = 5

// Open returns the IPv4 table and, unless the kernel has no IPv6 at all
// (/proc/net/if_inet6 absent), the IPv6 table; an unusable ip6tables then is
// an error (C-FW-2: abort startup). Whether an interface has an IPv6 address
// right now does not matter: one may get it later. It runs the iptables and
// ip6tables binaries found in PATH, and proves each usable by reading the
// filter table's OUTPUT chain.
func Open() (v4, v6 Table, err error) {
	return open(func() (bool, error) { return ipv6Enabled(ifInet6) }, newIPTables)
}

func newIPTables(ipv6 bool) (Table, error) {
	proto := iptables.ProtocolIPv4
	if ipv6 {
		proto = iptables.ProtocolIPv6
	}
	t, err := iptables.New(iptables.IPFamily(proto), iptables.Timeout(lockWait))
	if err != nil {
		return nil, err
	}
	return t, nil
}

// ipv6Enabled reports whether the kernel has IPv6 in this namespace: the
// address list at path exists (and can be read).
func ipv6Enabled(path string) (bool, error) {
	_, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("firewall: read %s: %w", path, err)
	}
	return true, nil
}

func open(ipv6On func() (bool, error), newTable func(ipv6 bool) (Table, error)) (v4, v6 Table, err error) {
	v4, err = openFamily("ipv4", false, newTable)
	if err != nil {
		return nil, nil, err
	}
	on, err := ipv6On()
	if err != nil {
		return nil, nil, err
	}
	if !on {
		return v4, nil, nil
	}
	v6, err = openFamily("ipv6", true, newTable)
	if err != nil {
		return nil, nil, fmt.Errorf("%w (IPv6 is on in this network namespace)", err)
	}
	return v4, v6, nil
}

func openFamily(name string, ipv6 bool, newTable func(bool) (Table, error)) (Table, error) {
	t, err := newTable(ipv6)
	if err != nil {
		return nil, fmt.Errorf("firewall: %s: find the iptables binary: %w", name, err)
	}
	ok, err := t.ChainExists(filter, output)
	if err == nil && !ok {
		err = errors.New("the filter table has no OUTPUT chain")
	}
	if err != nil {
		return nil, fmt.Errorf("firewall: %s: iptables is not usable: %w", name, err)
	}
	return t, nil
}
