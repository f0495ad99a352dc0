package egress

import (
	"net/netip"
)

// Reason says why the dial floor refuses an address; "" means the address is
// public.
type Reason string

// The floor's reasons. Each becomes the verdict rule "floor:<reason>".
const (
	ReasonLoopback    Reason = "loopback"
	ReasonLinkLocal   Reason = "link-local"
	ReasonMetadata    Reason = "metadata" // cloud instance metadata, link-local or not
	ReasonUnspecified Reason = "unspecified"
	ReasonMulticast   Reason = "multicast"
	ReasonBroadcast   Reason = "broadcast"
	ReasonPrivate     Reason = "private" // RFC 1918, IPv6 ULA, site-local, local-use NAT64
	ReasonCGNAT       Reason = "cgnat"   // 100.64.0.0/10, shared address space
	ReasonReserved    Reason = "reserved"
	ReasonInvalid     Reason = "invalid"
)

// rangeReason maps a special-purpose range to its reason.
type rangeReason struct {
	prefix netip.Prefix
	reason Reason
}

var (
	metadataAddrs = []netip.Addr{
		netip.MustParseAddr("169.254.169.254"), // AWS, GCP, Azure, …
		netip.MustParseAddr("fd00:ec2::254"),   // AWS over IPv6
	}
	// v4Ranges are the IANA special-purpose IPv4 ranges that are not
	// globally reachable (RFC 6890 and successors).
	v4Ranges = []rangeReason{
		{netip.MustParsePrefix("255.255.255.255/32"), ReasonBroadcast},
		{netip.MustParsePrefix("0.0.0.0/32"), ReasonUnspecified},
		{netip.MustParsePrefix("0.0.0.0/8"), ReasonReserved}, // "this network": Linux dials 0.x as local
		{netip.MustParsePrefix("10.0.0.0/8"), ReasonPrivate},
		{netip.MustParsePrefix("100.64.0.0/10"), ReasonCGNAT},
		{netip.MustParsePrefix("127.0.0.0/8"), ReasonLoopback},
		{netip.MustParsePrefix("169.254.0.0/16"), ReasonLinkLocal},
		{netip.MustParsePrefix("172.16.0.0/12"), ReasonPrivate},
		{netip.MustParsePrefix("192.0.0.0/24"), ReasonReserved},   // IETF protocol assignments
		{netip.MustParsePrefix("192.0.2.0/24"), ReasonReserved},   // TEST-NET-1
		{netip.MustParsePrefix("192.88.99.0/24"), ReasonReserved}, // 6to4 relay anycast (deprecated)
		{netip.MustParsePrefix("192.168.0.0/16"), ReasonPrivate},
		{netip.MustParsePrefix("198.18.0.0/15"), ReasonReserved},   // benchmarking
		{netip.MustParsePrefix("198.51.100.0/24"), ReasonReserved}, // TEST-NET-2
		{netip.MustParsePrefix("203.0.113.0/24"), ReasonReserved},  // TEST-NET-3
		{netip.MustParsePrefix("224.0.0.0/4"), ReasonMulticast},
		{netip.MustParsePrefix("240.0.0.0/4"), ReasonReserved},
	}
	// v6Ranges are checked after the transition forms are unwrapped; any
	// address outside 2000::/3 that none of them names is reserved.
	v6Ranges = []rangeReason{
		{netip.MustParsePrefix("::/128"), ReasonUnspecified},
		{netip.MustParsePrefix("::1/128"), ReasonLoopback},
		{netip.MustParsePrefix("64:ff9b:1::/48"), ReasonPrivate}, // local-use NAT64 (RFC 8215)
		{netip.MustParsePrefix("100::/64"), ReasonReserved},      // discard-only
		{netip.MustParsePrefix("2001:2::/48"), ReasonReserved},   // benchmarking
		{netip.MustParsePrefix("2001:10::/28"), ReasonReserved},  // ORCHID
		{netip.MustParsePrefix("2001:20::/28"), ReasonReserved},  // ORCHIDv2
		{netip.MustParsePrefix("2001:db8::/32"), ReasonReserved}, // documentation
		{netip.MustParsePrefix("3fff::/20"), ReasonReserved},     // documentation (RFC 9637)
		{netip.MustParsePrefix("5f00::/16"), ReasonReserved},     // SRv6 SIDs
		{netip.MustParsePrefix("fc00::/7"), ReasonPrivate},       // ULA
		{netip.MustParsePrefix("fe80::/10"), ReasonLinkLocal},
		{netip.MustParsePrefix("fec0::/10"), ReasonPrivate}, // site-local (deprecated)
		{netip.MustParsePrefix("ff00::/8"), ReasonMulticast},
	}
	globalUnicast6 = netip.MustParsePrefix("2000::/3")
)

// Classify is the dial floor (C-GW-5): it returns "" for a public address
// and otherwise the reason the gate must not dial it, in every policy mode.
// IPv4 hidden in an IPv6 transition form (v4-mapped, v4-compatible, SIIT,
// NAT64 64:ff9b::/96, 6to4 2002::/16, Teredo 2001::/32 server and client,
// ISATAP interface ids) is unwrapped and checked as well: the address is
// public only if every IPv4 address it carries is.
func Classify(a netip.Addr) Reason {
	if !a.IsValid() {
		return ReasonInvalid
	}
	a = a.WithZone("")
	for _, m := range metadataAddrs {
		if a == m {
			return ReasonMetadata
		}
	}
	if a.Is4() {
		return lookup(v4Ranges, a)
	}
	for _, v4 := range embeddedV4(a) {
		if r := Classify(v4); r != "" {
			return r
		}
	}
	if r := lookup(v6Ranges, a); r != "" || globalUnicast6.Contains(a) {
		return r
	}
	if len(embeddedV4(a)) > 0 {
		return "" // a transition form outside 2000::/3 whose IPv4 is public
	}
	return ReasonReserved
}

func lookup(ranges []rangeReason, a netip.Addr) Reason {
	for _, r := range ranges {
		if r.prefix.Contains(a) {
			return r.reason
		}
	}
	return ""
}

var (
	v4Compat  = netip.MustParsePrefix("::/96")
	v4Mapped  = netip.MustParsePrefix("::ffff:0:0/96")
	siit      = netip.MustParsePrefix("::ffff:0:0:0/96")
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
	teredo    = netip.MustParsePrefix("2001::/32")
)

// embeddedV4 returns the IPv4 addresses an IPv6 address carries in a
// transition form, so the floor can judge where a dial would really land.
func embeddedV4(a netip.Addr) []netip.Addr {
	b := a.As16()
	low := netip.AddrFrom4([4]byte(b[12:16]))
	var out []netip.Addr
	switch {
	case v4Mapped.Contains(a), siit.Contains(a), nat64.Contains(a):
		out = append(out, low)
	case v4Compat.Contains(a) && a != netip.IPv6Unspecified() && a != netip.IPv6Loopback():
		out = append(out, low)
	case sixToFour.Contains(a):
		out = append(out, netip.AddrFrom4([4]byte(b[2:6])))
	case teredo.Contains(a):
		client := [4]byte{^b[12], ^b[13], ^b[14], ^b[15]}
		out = append(out, netip.AddrFrom4([4]byte(b[4:8])), netip.AddrFrom4(client))
	}
	// ISATAP (RFC 5214): interface id 0000:5efe or 0200:5efe, IPv4 in the
	// low 32 bits, under any prefix.
	if (b[8]|0x02) == 0x02 && b[9] == 0 && b[10] == 0x5e && b[11] == 0xfe {
		out = append(out, low)
	}
	return out
}
