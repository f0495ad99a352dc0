package egress

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Host is a parsed request host: a lower-case name without its trailing dot,
// or an IP address (Addr valid, Name empty).
type Host struct {
	Name string
	Addr netip.Addr
}

// IsIP reports whether the host is an IP literal.
func (h Host) IsIP() bool { return h.Addr.IsValid() }

// String returns the canonical spelling (IPv6 without brackets).
func (h Host) String() string {
	if h.IsIP() {
		return h.Addr.String()
	}
	return h.Name
}

// Target is a parsed request target: the CONNECT authority or the absolute
// URI's host and port (never the spoofable Host header, C-GW-2).
type Target struct {
	Host Host
	Port uint16
}

// maxNameLen is DNS's limit on a name without its trailing dot.
const maxNameLen = 253

// ParseTarget parses "host:port" as a CONNECT authority spells it: an IPv6
// literal in brackets, a decimal port 1..65535. The host is checked by
// ParseHost.
func ParseTarget(hostport string) (Target, error) {
	var host, port string
	if rest, ok := strings.CutPrefix(hostport, "["); ok {
		h, p, ok := strings.Cut(rest, "]")
		if !ok || !strings.HasPrefix(p, ":") || !strings.Contains(h, ":") {
			return Target{}, fmt.Errorf("%w: %.64q: want [ipv6]:port", ErrInvalidHost, hostport)
		}
		host, port = h, p[1:]
	} else {
		i := strings.LastIndexByte(hostport, ':')
		if i < 0 || strings.IndexByte(hostport[:i], ':') >= 0 {
			return Target{}, fmt.Errorf("%w: %.64q: want host:port", ErrInvalidHost, hostport)
		}
		host, port = hostport[:i], hostport[i+1:]
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil || n == 0 || port[0] == '+' {
		return Target{}, fmt.Errorf("%w: %.64q: port must be 1 to 65535", ErrInvalidHost, hostport)
	}
	h, err := ParseHost(host)
	if err != nil {
		return Target{}, err
	}
	return Target{Host: h, Port: uint16(n)}, nil
}

// ParseHost parses a host as a URL carries it (IPv6 with or without
// brackets). Names are lower-cased and lose one trailing dot; they must be
// ASCII letters, digits, '-' and '_' in labels of 1..63 characters (IDNs
// arrive punycoded). A name whose last label is numeric (digits, or 0x and
// hex digits — where WHATWG URL parsers and inet_aton read an IPv4 number) must
// be a canonical dotted-quad IPv4 literal, or ErrNonCanonicalIP. IPv6
// literals with a zone are refused.
func ParseHost(s string) (Host, error) {
	if inner, ok := strings.CutPrefix(s, "["); ok {
		inner, ok = strings.CutSuffix(inner, "]")
		if !ok || !strings.Contains(inner, ":") {
			return Host{}, fmt.Errorf("%w: %.64q: unbalanced brackets", ErrInvalidHost, s)
		}
		s = inner
	}
	if strings.Contains(s, ":") {
		a, err := netip.ParseAddr(s)
		if err != nil || !a.Is6() || a.Zone() != "" {
			return Host{}, fmt.Errorf("%w: %.64q: not an IPv6 address without zone", ErrInvalidHost, s)
		}
		return Host{Addr: a}, nil
	}
	name := strings.ToLower(strings.TrimSuffix(s, "."))
	if err := checkName(name); err != nil {
		return Host{}, fmt.Errorf("%w: %.64q: %s", ErrInvalidHost, s, err.Error())
	}
	if !numericLabel(name[strings.LastIndexByte(name, '.')+1:]) {
		return Host{Name: name}, nil
	}
	a, err := netip.ParseAddr(name)
	if err != nil || !a.Is4() || a.String() != name {
		return Host{}, fmt.Errorf("%w: %.64q", ErrNonCanonicalIP, s)
	}
	return Host{Addr: a}, nil
}

// nameError is a plain problem description; ParseHost and ParsePattern add
// their own sentinel.
type nameError string

func (e nameError) Error() string { return string(e) }

// checkName checks a lower-cased name without trailing dot.
func checkName(name string) error {
	if name == "" || len(name) > maxNameLen {
		return nameError(fmt.Sprintf("name must be 1 to %d characters", maxNameLen))
	}
	for _, label := range strings.Split(name, ".") {
		if label == "" || len(label) > 63 {
			return nameError("every label must be 1 to 63 characters")
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' && c != '_' {
				return nameError(fmt.Sprintf("character %q is not allowed in a host name", c))
			}
		}
	}
	return nil
}

// numericLabel reports whether a label reads as a number to an IPv4 parser:
// decimal or octal digits, or 0x followed by hex digits (possibly none).
func numericLabel(l string) bool {
	if hex, ok := strings.CutPrefix(l, "0x"); ok {
		return strings.Trim(hex, "0123456789abcdef") == ""
	}
	return l != "" && strings.Trim(l, "0123456789") == ""
}
