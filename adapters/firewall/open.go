package firewall

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/coreos/go-iptables/iptables"
)

// disableIPv6 is where the kernel says whether IPv6 is on in this network
// namespace; it is absent when the kernel has no IPv6 at all.
const disableIPv6 = "/proc/sys/net/ipv6/conf/all/disable_ipv6"

// lockWait is how long, in seconds, an iptables call waits for the xtables
// lock another process (Docker, a second gate start) may hold.
const lockWait = 5

// Open returns the IPv4 table and, when IPv6 is enabled in this network
// namespace (/proc/sys/net/ipv6/conf/all/disable_ipv6 absent or "0"), the IPv6
// table; an unusable ip6tables while IPv6 is on is an error (C-FW-2: abort
// startup). It runs the iptables and ip6tables binaries found in PATH, and
// proves each usable by reading the filter table's OUTPUT chain.
func Open() (v4, v6 Table, err error) {
	return open(func() (bool, error) { return ipv6Enabled(disableIPv6) }, newIPTables)
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

// ipv6Enabled reports whether IPv6 is on, reading the kernel's switch at path.
func ipv6Enabled(path string) (bool, error) {
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		// The brief and C-FW-2 treat "absent" as on: a kernel without the
		// switch is not proof that IPv6 is off, so fail closed.
		return true, nil
	case err != nil:
		return false, fmt.Errorf("firewall: read %s: %w", path, err)
	}
	return strings.TrimSpace(string(b)) == "0", nil
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
