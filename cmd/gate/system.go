package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/sandgate/sandgate/ports"
)

// resolveTimeout bounds the resolution of the control plane's host.
const resolveTimeout = 10 * time.Second

// osSystem is the real system: the firewall, the filesystem, the process's
// credentials, the resolver and the network.
type osSystem struct {
	firewall       func(uid uint32) error
	resolve        func(ctx context.Context, host string) ([]netip.Addr, error)
	interfaceAddrs func() ([]net.Addr, error)
}

var _ ports.GateSystem = osSystem{}

func (s osSystem) InstallFirewall(uid uint32) error { return s.firewall(uid) }

// PrepareCADir creates the directory (0755: the sandbox side reads the
// certificate) and gives it to the gate's uid, which writes the file after
// dropping root. The directory must be the gate's own: it is chowned even if
// it exists (a volume's mount point is root's). A CA file that exists is an
// earlier run's, whose key is gone: it is removed so that nothing mistakes it
// for this run's.
func (osSystem) PrepareCADir(caFile string, uid, gid uint32) error {
	dir := filepath.Dir(caFile)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create: %w", err)
	}
	// Remove and chmod while root still owns the directory: the gate holds
	// neither CAP_FOWNER nor CAP_DAC_OVERRIDE, so after the chown only the
	// gate uid could.
	if err := os.Remove(caFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove the previous run's CA file: %w", err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return fmt.Errorf("chmod: %w", err)
	}
	if err := os.Chown(dir, int(uid), int(gid)); err != nil {
		return fmt.Errorf("chown: %w", err)
	}
	return nil
}

func (osSystem) DropPrivileges(uid, gid uint32) error { return dropPrivileges(uid, gid) }

func (osSystem) VerifyUnprivileged(uid, gid uint32) error { return verifyDropped(uid, gid, true) }

func (osSystem) ClearCAFile(caFile string) error {
	if err := os.MkdirAll(filepath.Dir(caFile), 0o755); err != nil {
		return fmt.Errorf("create its directory: %w", err)
	}
	if err := os.Remove(caFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove the previous run's CA file: %w", err)
	}
	return nil
}

// DenyList resolves the control plane's host (an IP literal is taken as is)
// and lists the gate's interface addresses; each becomes a single-address
// prefix. A failed resolution is a startup failure: a deny list without the
// control plane would let the sandbox reach it through the proxy whenever
// the policy admits its name.
func (s osSystem) DenyList(ctx context.Context, host string) ([]netip.Prefix, error) {
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = append(addrs, a)
	} else {
		rctx, cancel := context.WithTimeout(ctx, resolveTimeout)
		defer cancel()
		res, err := s.resolve(rctx, host)
		if err != nil {
			return nil, fmt.Errorf("resolve the CONTROLPLANE_URL host: %w", err)
		}
		if len(res) == 0 {
			return nil, errors.New("resolve the CONTROLPLANE_URL host: no address")
		}
		addrs = append(addrs, res...)
	}
	ifs, err := s.interfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("interface addresses: %w", err)
	}
	for _, a := range ifs {
		var ip net.IP
		switch v := a.(type) {
		case *net.IPNet:
			ip = v.IP
		case *net.IPAddr:
			ip = v.IP
		}
		if na, ok := netip.AddrFromSlice(ip); ok {
			addrs = append(addrs, na)
		}
	}
	return singlePrefixes(addrs), nil
}

// singlePrefixes returns each distinct address as a full-length prefix,
// sorted, IPv4-mapped forms unmapped and zones dropped.
func singlePrefixes(addrs []netip.Addr) []netip.Prefix {
	out := make([]netip.Prefix, 0, len(addrs))
	for _, a := range addrs {
		a = a.Unmap().WithZone("")
		if a.IsValid() {
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
		}
	}
	slices.SortFunc(out, func(x, y netip.Prefix) int { return x.Addr().Compare(y.Addr()) })
	return slices.Compact(out)
}

func (osSystem) Listen(addr netip.AddrPort) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr.String())
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	return ln, nil
}
