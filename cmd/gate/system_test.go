package main

import (
	"context"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDenyList(t *testing.T) {
	t.Parallel()
	ifaces := func() ([]net.Addr, error) {
		return []net.Addr{
			&net.IPNet{IP: net.ParseIP("127.0.0.1"), Mask: net.CIDRMask(8, 32)},
			&net.IPNet{IP: net.ParseIP("172.18.0.5").To4(), Mask: net.CIDRMask(16, 32)},
			&net.IPNet{IP: net.ParseIP("fe80::42:acff:fe12:5"), Mask: net.CIDRMask(64, 128)},
			&net.IPAddr{IP: net.ParseIP("::1")},
		}, nil
	}
	var asked []string
	s := osSystem{
		resolve: func(_ context.Context, host string) ([]netip.Addr, error) {
			asked = append(asked, host)
			return []netip.Addr{netip.MustParseAddr("::ffff:10.0.0.7"), netip.MustParseAddr("172.18.0.5")}, nil
		},
		interfaceAddrs: ifaces,
	}
	got, err := s.DenyList(context.Background(), "executor")
	require.NoError(t, err)
	require.Equal(t, []string{"executor"}, asked)
	require.Equal(t, []netip.Prefix{
		netip.MustParsePrefix("10.0.0.7/32"),
		netip.MustParsePrefix("127.0.0.1/32"),
		netip.MustParsePrefix("172.18.0.5/32"),
		netip.MustParsePrefix("::1/128"),
		netip.MustParsePrefix("fe80::42:acff:fe12:5/128"),
	}, got)

	// An IP literal is not resolved.
	asked = nil
	got, err = s.DenyList(context.Background(), "fd00::9")
	require.NoError(t, err)
	require.Empty(t, asked)
	require.Contains(t, got, netip.MustParsePrefix("fd00::9/128"))
}

func TestDenyListFailures(t *testing.T) {
	t.Parallel()
	ok := func() ([]net.Addr, error) { return nil, nil }
	for name, s := range map[string]osSystem{
		"resolution fails": {
			resolve:        func(context.Context, string) ([]netip.Addr, error) { return nil, errInjected },
			interfaceAddrs: ok,
		},
		"no address": {
			resolve:        func(context.Context, string) ([]netip.Addr, error) { return nil, nil },
			interfaceAddrs: ok,
		},
		"interfaces fail": {
			resolve: func(context.Context, string) ([]netip.Addr, error) {
				return []netip.Addr{netip.MustParseAddr("10.0.0.1")}, nil
			},
			interfaceAddrs: func() ([]net.Addr, error) { return nil, errInjected },
		},
	} {
		_, err := s.DenyList(context.Background(), "executor")
		require.Error(t, err, name)
	}
}

func TestPrepareCADir(t *testing.T) {
	t.Parallel()
	if os.Getuid() != 0 {
		failOrSkipWithoutRoot(t)
	}
	dir := filepath.Join(t.TempDir(), "run", "sandgate")
	ca := filepath.Join(dir, "ca.pem")
	require.NoError(t, osSystem{}.PrepareCADir(ca, 64250, 64251))
	fi, err := os.Stat(dir)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o755), fi.Mode().Perm())
	st, ok := fi.Sys().(*syscall.Stat_t)
	require.True(t, ok)
	require.Equal(t, uint32(64250), st.Uid)
	require.Equal(t, uint32(64251), st.Gid)

	// A previous run's CA file is removed; the directory is reused.
	require.NoError(t, os.WriteFile(ca, []byte("stale"), 0o644))
	require.NoError(t, osSystem{}.PrepareCADir(ca, 64250, 64251))
	_, err = os.Stat(ca)
	require.ErrorIs(t, err, os.ErrNotExist)

	// A directory in the CA file's place is an error, not removed.
	require.NoError(t, os.MkdirAll(filepath.Join(ca, "x"), 0o755))
	require.Error(t, osSystem{}.PrepareCADir(ca, 64250, 64251))
}

func TestListenLoopback(t *testing.T) {
	t.Parallel()
	ln, err := osSystem{}.Listen(netip.MustParseAddrPort("127.0.0.1:0"))
	require.NoError(t, err)
	require.NoError(t, ln.Close())
	// Port taken: an error, reported.
	ln, err = net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer func() { require.NoError(t, ln.Close()) }()
	_, err = osSystem{}.Listen(netip.MustParseAddrPort(ln.Addr().String()))
	require.ErrorIs(t, err, syscall.EADDRINUSE)
}

// failOrSkipWithoutRoot: these tests change ids or owners, which needs
// root; CI runs as root, so there it is a failure, elsewhere a skip.
func failOrSkipWithoutRoot(t *testing.T) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal("this test needs root, and CI runs as root")
	}
	t.Skip("this test needs root")
}
