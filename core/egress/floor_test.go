package egress

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]Reason{
		// public
		"8.8.8.8": "", "1.1.1.1": "", "2606:4700::1111": "", "93.184.216.34": "",
		"::ffff:8.8.8.8": "", "64:ff9b::808:808": "", "2002:808:808::1": "",
		"2001:0:808:808::f7f7:f7f7": "", "2a00:1450::5efe:808:808": "",
		// IPv4 ranges
		"127.0.0.1": ReasonLoopback, "127.255.255.254": ReasonLoopback,
		"10.1.2.3": ReasonPrivate, "172.16.0.1": ReasonPrivate, "172.31.255.255": ReasonPrivate,
		"192.168.1.1": ReasonPrivate, "100.64.0.1": ReasonCGNAT, "100.127.255.255": ReasonCGNAT,
		"169.254.1.1": ReasonLinkLocal, "169.254.169.254": ReasonMetadata,
		"0.0.0.0": ReasonUnspecified, "0.1.2.3": ReasonReserved, "255.255.255.255": ReasonBroadcast,
		"224.0.0.1": ReasonMulticast, "239.255.255.250": ReasonMulticast, "240.0.0.1": ReasonReserved,
		"192.0.0.8": ReasonReserved, "192.0.2.1": ReasonReserved, "198.18.0.1": ReasonReserved,
		"198.51.100.1": ReasonReserved, "203.0.113.1": ReasonReserved, "192.88.99.1": ReasonReserved,
		// IPv6 ranges
		"::": ReasonUnspecified, "::1": ReasonLoopback, "fe80::1": ReasonLinkLocal, "fe80::1%eth0": ReasonLinkLocal,
		"fd00:ec2::254": ReasonMetadata, "fd12:3456::1": ReasonPrivate, "fc00::1": ReasonPrivate,
		"fec0::1": ReasonPrivate, "ff02::1": ReasonMulticast, "2001:db8::1": ReasonReserved,
		"100::1": ReasonReserved, "64:ff9b:1::1": ReasonPrivate, "3fff::1": ReasonReserved,
		"5f00::1": ReasonReserved, "2001:2::1": ReasonReserved, "2001:10::1": ReasonReserved,
		"2001:20::1": ReasonReserved, "4000::1": ReasonReserved, "1234::1": ReasonReserved,
		// IPv4 hidden in IPv6 transition forms
		"::ffff:127.0.0.1": ReasonLoopback, "::ffff:7f00:1": ReasonLoopback, "::ffff:10.0.0.1": ReasonPrivate,
		"::ffff:169.254.169.254": ReasonMetadata, "::ffff:0.0.0.0": ReasonUnspecified,
		"::127.0.0.1": ReasonLoopback, "::10.0.0.1": ReasonPrivate, "::2": ReasonReserved,
		"::ffff:0:127.0.0.1": ReasonLoopback,
		"64:ff9b::7f00:1":    ReasonLoopback, "64:ff9b::a9fe:a9fe": ReasonMetadata, "64:ff9b::c0a8:101": ReasonPrivate,
		"2002:7f00:1::1": ReasonLoopback, "2002:a00:1::": ReasonPrivate, "2002:6440:1::1": ReasonCGNAT,
		"2001:0:7f00:1::":               ReasonLoopback, // Teredo server 127.0.0.1
		"2001:0:808:808::80ff:fffe":     ReasonLoopback, // Teredo client ^0x80fffffe = 127.0.0.1
		"2001:0:808:808::f5ff:fffe":     ReasonPrivate,  // Teredo client 10.0.0.1
		"2a00:1450::5efe:7f00:1":        ReasonLoopback, // ISATAP
		"2a00:1450::200:5efe:a9fe:a9fe": ReasonMetadata, // ISATAP, universal bit
		"2001:0:808:808::f7f7:f7f7%x":   "",
	} {
		a, err := netip.ParseAddr(addr)
		require.NoError(t, err, addr)
		require.Equal(t, want, Classify(a), addr)
	}
	require.Equal(t, ReasonInvalid, Classify(netip.Addr{}))
}
