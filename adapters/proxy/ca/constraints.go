package ca

import (
	"crypto/x509"
	"fmt"
	"net"
	"net/netip"
	"strings"

	"github.com/sandgate/sandgate/core/egress"
)

// unresolvable is the one name an otherwise empty permitted set holds:
// RFC 6761 reserves "invalid", so it never resolves. An empty permitted
// list in X.509 means "no constraint", i.e. everything; this keeps "no
// pattern" meaning "nothing".
const unresolvable = "invalid"

// mapped4 is the IPv4-mapped IPv6 block (::ffff:0:0/96). Go encodes an
// IPv4-mapped address in a certificate as its 4-byte IPv4 form, so a range
// there also has to be permitted in IPv4 form for such a leaf to verify.
var mapped4 = netip.MustParsePrefix("::ffff:0:0/96")

// nameConstraints is what New writes into the CA certificate.
type nameConstraints struct {
	dns []string
	ips []*net.IPNet
}

// constraintsFor translates allowed_hosts patterns into name constraints:
// an exact name stays itself (X.509 then also permits its subdomains, which
// Leaf still refuses), a wildcard "*.example.com" becomes ".example.com"
// (subdomains only, never the apex, in Go and per RFC 5280 erratum 5997),
// and IP and CIDR entries become IP ranges; a port plays no part (X.509
// names hosts). Pattern's fields are not exported, so each is re-read from
// its Host, which ParsePattern produced and therefore parses back to the
// same host pattern.
func constraintsFor(permitted []egress.Pattern) (nameConstraints, error) {
	var nc nameConstraints
	for i, p := range permitted {
		s := p.Host()
		if _, err := egress.ParsePattern(s); err != nil {
			return nameConstraints{}, fmt.Errorf("ca: permitted[%d]: %w", i, err)
		}
		switch {
		case strings.Contains(s, "/"):
			pfx, err := netip.ParsePrefix(s)
			if err != nil {
				return nameConstraints{}, fmt.Errorf("ca: permitted[%d]: %w", i, err)
			}
			nc.addPrefix(pfx)
		case strings.HasPrefix(s, "*."):
			h, err := egress.ParseHost(s[len("*."):])
			if err != nil {
				return nameConstraints{}, fmt.Errorf("ca: permitted[%d]: %w", i, err)
			}
			nc.dns = append(nc.dns, "."+h.Name)
		default:
			h, err := egress.ParseHost(s)
			if err != nil {
				return nameConstraints{}, fmt.Errorf("ca: permitted[%d]: %w", i, err)
			}
			if h.IsIP() {
				nc.addPrefix(netip.PrefixFrom(h.Addr, h.Addr.BitLen()))
			} else {
				nc.dns = append(nc.dns, h.Name)
			}
		}
	}
	return nc, nil
}

// addPrefix permits pfx and, for the part of an IPv6 prefix inside
// ::ffff:0:0/96, the same addresses in IPv4 form (see mapped4).
func (nc *nameConstraints) addPrefix(pfx netip.Prefix) {
	nc.ips = append(nc.ips, ipNet(pfx))
	if !pfx.Addr().Is6() {
		return
	}
	switch {
	case pfx.Bits() <= mapped4.Bits() && pfx.Contains(mapped4.Addr()):
		nc.ips = append(nc.ips, ipNet(netip.PrefixFrom(netip.IPv4Unspecified(), 0)))
	case pfx.Bits() >= mapped4.Bits() && pfx.Addr().Is4In6():
		nc.ips = append(nc.ips, ipNet(netip.PrefixFrom(pfx.Addr().Unmap(), pfx.Bits()-mapped4.Bits())))
	}
}

// ipNet converts a prefix with the address and mask of the same length, as
// crypto/x509 needs them (a 4-byte address with a 16-byte mask is dropped).
func ipNet(pfx netip.Prefix) *net.IPNet {
	a := pfx.Addr()
	return &net.IPNet{IP: net.IP(a.AsSlice()), Mask: net.CIDRMask(pfx.Bits(), a.BitLen())}
}

// apply writes the constraints into the CA template, marked critical so a
// verifier that does not understand them must reject the chain. Email
// (rfc822Name) and URI names are permitted only under "invalid": Go encodes
// PermittedEmailAddresses and PermittedURIDomains as host constraints, and
// an empty list would permit every address and URI.
func (nc nameConstraints) apply(tmpl *x509.Certificate) {
	tmpl.PermittedDNSDomainsCritical = true
	tmpl.PermittedDNSDomains = nc.dns
	if len(nc.dns) == 0 {
		tmpl.PermittedDNSDomains = []string{unresolvable}
	}
	tmpl.PermittedIPRanges = nc.ips
	if len(nc.ips) == 0 {
		tmpl.ExcludedIPRanges = []*net.IPNet{
			ipNet(netip.PrefixFrom(netip.IPv4Unspecified(), 0)),
			ipNet(netip.PrefixFrom(netip.IPv6Unspecified(), 0)),
		}
	}
	tmpl.PermittedEmailAddresses = []string{unresolvable}
	tmpl.PermittedURIDomains = []string{unresolvable}
}
