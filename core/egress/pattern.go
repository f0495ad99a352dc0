package egress

import (
	"fmt"
	"net/netip"
	"strings"
)

// Pattern is one parsed allowed_hosts entry (C-GW-2): an exact name, a
// "*.suffix" wildcard (any depth of subdomain, never the apex), an IP literal
// or a CIDR. IP and CIDR entries also open the dial floor for the addresses
// they cover (C-GW-5).
type Pattern struct {
	raw    string
	name   string       // exact name, or the suffix of a wildcard
	wild   bool         // name is a "*." suffix
	prefix netip.Prefix // valid for IP (a full-length prefix) and CIDR entries
}

// String returns the entry as written in the config.
func (p Pattern) String() string { return p.raw }

// ParsePattern parses an allowed_hosts entry. Names follow ParseHost (lower
// case, one trailing dot ignored, no empty label); a wildcard is exactly "*."
// in front of such a name; IP literals must be canonical (no 127.1); a CIDR
// must have no host bits set, so what it opens is what it says.
func ParsePattern(s string) (Pattern, error) {
	if a, _, ok := strings.Cut(s, "/"); ok {
		pfx, err := netip.ParsePrefix(s)
		if err != nil || pfx.Masked() != pfx || (pfx.Addr().Is4() && pfx.Addr().String() != a) {
			return Pattern{}, fmt.Errorf("%w: %.64q: want a CIDR without host bits, like 10.0.0.0/8", ErrInvalidPattern, s)
		}
		return Pattern{raw: s, prefix: pfx}, nil
	}
	if suffix, ok := strings.CutPrefix(s, "*."); ok {
		h, err := ParseHost(suffix)
		if err != nil || h.IsIP() {
			return Pattern{}, fmt.Errorf("%w: %.64q: want *. followed by a host name", ErrInvalidPattern, s)
		}
		return Pattern{raw: s, name: h.Name, wild: true}, nil
	}
	h, err := ParseHost(s)
	if err != nil {
		return Pattern{}, fmt.Errorf("%w: %.64q: %w", ErrInvalidPattern, s, err)
	}
	if h.IsIP() {
		return Pattern{raw: s, prefix: netip.PrefixFrom(h.Addr, h.Addr.BitLen())}, nil
	}
	return Pattern{raw: s, name: h.Name}, nil
}

// MatchHost reports whether the pattern admits the host: a name pattern
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

// Contains reports whether an IP or CIDR pattern covers the address.
func (p Pattern) Contains(a netip.Addr) bool {
	if !p.prefix.IsValid() {
		return false
	}
	a = a.WithZone("")
	return p.prefix.Contains(a) || p.prefix.Contains(a.Unmap())
}

// MatchHost reports whether the host s (as ParseHost reads it) matches the
// allowed_hosts entry pattern. Either failing to parse is no match: a
// malformed entry never admits anything.
func MatchHost(pattern, s string) bool {
	p, err := ParsePattern(pattern)
	if err != nil {
		return false
	}
	h, err := ParseHost(s)
	return err == nil && p.MatchHost(h)
}
