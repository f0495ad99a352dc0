package egress

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// Pattern is one parsed allowed_hosts entry (C-GW-2): an exact name, a
// "*.suffix" wildcard (any depth of subdomain, never the apex), an IP literal
// or a CIDR, each optionally followed by ":port" or ":*" (IPv6 and IPv6 CIDRs
// in brackets then: "[fd00::/8]:5432"). Without a port an entry admits the
// web ports only, 80 and 443 (WebPorts): an allowlisted host is not every
// service on it. ":*" admits every port. IP and CIDR entries also open the
// dial floor for the addresses they cover (C-GW-5), on the ports they admit.
type Pattern struct {
	raw     string
	name    string       // exact name, or the suffix of a wildcard
	wild    bool         // name is a "*." suffix
	prefix  netip.Prefix // valid for IP (a full-length prefix) and CIDR entries
	port    uint16       // the one port admitted; 0 with anyPort false: WebPorts
	anyPort bool         // ":*"
}

// WebPorts are the ports an allowed_hosts entry without a port admits.
var WebPorts = [...]uint16{80, 443}

// String returns the entry as written in the config.
func (p Pattern) String() string { return p.raw }

// Host returns the entry without its port: the host part, as written.
func (p Pattern) Host() string {
	h, _, _ := splitPort(p.raw)
	return h
}

// ParsePattern parses an allowed_hosts entry. Names follow ParseHost (lower
// case, one trailing dot ignored, no empty label); a wildcard is exactly "*."
// in front of such a name; IP literals must be canonical (no 127.1); a CIDR
// must have no host bits set, so what it opens is what it says. A port is
// decimal, 1 to 65535, or "*".
func ParsePattern(s string) (Pattern, error) {
	host, port, err := splitPort(s)
	if err != nil {
		return Pattern{}, fmt.Errorf("%w: %.64q: %w", ErrInvalidPattern, s, err)
	}
	p, err := parseHostPattern(host)
	if err != nil {
		return Pattern{}, err
	}
	p.raw = s
	switch port {
	case "":
	case "*":
		p.anyPort = true
	default:
		n, err := strconv.ParseUint(port, 10, 16)
		if err != nil || n == 0 || port[0] == '+' || port[0] == '0' {
			return Pattern{}, fmt.Errorf("%w: %.64q: port must be 1 to 65535 or *", ErrInvalidPattern, s)
		}
		p.port = uint16(n)
	}
	return p, nil
}

// splitPort splits an entry into its host part and its port ("" when it has
// none). A bracketed host carries IPv6; an unbracketed one with more than
// one colon is IPv6 without a port.
func splitPort(s string) (host, port string, err error) {
	if rest, ok := strings.CutPrefix(s, "["); ok {
		h, after, ok := strings.Cut(rest, "]")
		if !ok {
			return "", "", nameError("unbalanced brackets")
		}
		if after == "" {
			return s, "", nil
		}
		port, ok = strings.CutPrefix(after, ":")
		if !ok || port == "" {
			return "", "", nameError("want [ipv6]:port")
		}
		return h, port, nil
	}
	if strings.Count(s, ":") != 1 {
		return s, "", nil
	}
	host, port, _ = strings.Cut(s, ":")
	if port == "" {
		return "", "", nameError("empty port")
	}
	return host, port, nil
}

// parseHostPattern parses the host part of an entry.
func parseHostPattern(s string) (Pattern, error) {
	if a, _, ok := strings.Cut(s, "/"); ok {
		pfx, err := netip.ParsePrefix(s)
		if err != nil || pfx.Masked() != pfx || (pfx.Addr().Is4() && pfx.Addr().String() != a) {
			return Pattern{}, fmt.Errorf("%w: %.64q: want a CIDR without host bits, like 10.0.0.0/8", ErrInvalidPattern, s)
		}
		return Pattern{prefix: pfx}, nil
	}
	if suffix, ok := strings.CutPrefix(s, "*."); ok {
		h, err := ParseHost(suffix)
		if err != nil || h.IsIP() {
			return Pattern{}, fmt.Errorf("%w: %.64q: want *. followed by a host name", ErrInvalidPattern, s)
		}
		return Pattern{name: h.Name, wild: true}, nil
	}
	h, err := ParseHost(s)
	if err != nil {
		return Pattern{}, fmt.Errorf("%w: %.64q: %w", ErrInvalidPattern, s, err)
	}
	if h.IsIP() {
		return Pattern{prefix: netip.PrefixFrom(h.Addr, h.Addr.BitLen())}, nil
	}
	return Pattern{name: h.Name}, nil
}

// MatchPort reports whether the pattern admits the port.
func (p Pattern) MatchPort(port uint16) bool {
	switch {
	case p.anyPort:
		return true
	case p.port != 0:
		return port == p.port
	default:
		return slices.Contains(WebPorts[:], port)
	}
}

func (p Pattern) hasPort() bool { return p.anyPort || p.port != 0 }

// Match reports whether the pattern admits the target: its host and its
// port.
func (p Pattern) Match(t Target) bool { return p.MatchHost(t.Host) && p.MatchPort(t.Port) }

// MatchHost reports whether the pattern admits the host, whatever the
// port (a credential's binding is by host): a name pattern
// matches names, an IP or CIDR pattern matches IP literals it contains (an
// IPv4-mapped IPv6 literal counts as its IPv4 address).
func (p Pattern) MatchHost(h Host) bool {
	if h.IsIP() {
		return p.Contains(h.Addr)
	}
	switch {
	case p.prefix.IsValid():
		return false
	case p.wild:
		return len(h.Name) > len(p.name) && strings.HasSuffix(h.Name, p.name) && h.Name[len(h.Name)-len(p.name)-1] == '.'
	default:
		return h.Name == p.name
	}
}

// Contains reports whether an IP or CIDR pattern covers the address, on
// any port.
func (p Pattern) Contains(a netip.Addr) bool {
	if !p.prefix.IsValid() {
		return false
	}
	a = a.WithZone("")
	return p.prefix.Contains(a) || p.prefix.Contains(a.Unmap())
}

// MatchHost reports whether the host s (as ParseHost reads it) matches the
// host part of the allowed_hosts entry pattern, whatever its port. Either failing to parse is no match: a
// malformed entry never admits anything.
func MatchHost(pattern, s string) bool {
	p, err := ParsePattern(pattern)
	if err != nil {
		return false
	}
	h, err := ParseHost(s)
	return err == nil && p.MatchHost(h)
}
