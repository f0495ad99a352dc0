package firewall

import (
	"strconv"
	"strings"
)

// rule is one rule of the own chain, written exactly as `iptables -S` prints
// it back (normalised: /32 on addresses, the implicit -m udp/-m tcp of --dport,
// the default --reject-with spelled out), so the same tokens serve as the
// arguments of Append and as the expected listing.
type rule []string

func (r rule) line(chain string) string {
	return "-A " + chain + " " + strings.Join(r, " ")
}

// anyUser is every uid a process can have ((uid_t)-1 is not one).
const anyUser = "0-4294967294"

// jump is the one rule of OUTPUT the firewall owns.
var jump = rule{"-j", Chain}

// chainRules returns the own chain's rules for one family, in order. The order
// is the policy:
//
//  1. the gate's uid goes anywhere (uid only: a gid match would also let out
//     any sandbox process that has or gains that group);
//  2. IPv6 only: neighbour solicitations and advertisements the kernel itself
//     sends go out. Without them the gate's own IPv6 traffic never finds its
//     next hop (measured: the gate uid's dial times out), because the kernel
//     sends them from its own socket, which no uid owns. The match is
//     `! --uid-owner 0-4294967294`: xt_owner matches a negated uid for a
//     socket without a file (the kernel's) and never for a process's socket,
//     whatever its uid, so a sandbox process cannot use these rules even with
//     a raw socket. Only these two types: other kernel-sent ICMPv6 (errors
//     quoting a packet a sandbox process sent from a foreign source address
//     with IPV6_FREEBIND) could carry its data out.
//  3. IPv4 only: nothing reaches Docker's embedded resolver 127.0.0.11 (B-4).
//     nat OUTPUT has already rewritten the port by the time filter OUTPUT
//     runs, so the match is on the address alone;
//  4. no DNS on loopback either, in both families, before
//  5. the loopback accept that keeps the sandbox's own dev servers and the
//     gate's proxy on 127.0.0.1 reachable;
//  6. everything else is refused: TCP with a reset so clients fail at once
//     instead of timing out, the rest with ICMP port-unreachable.
func chainRules(r Rules, ipv6 bool) []rule {
	unreachable := "icmp-port-unreachable"
	if ipv6 {
		unreachable = "icmp6-port-unreachable"
	}
	rules := []rule{{"-m", "owner", "--uid-owner", strconv.FormatUint(uint64(r.GateUID), 10), "-j", "ACCEPT"}}
	if ipv6 {
		for _, typ := range []string{"135", "136"} {
			rules = append(rules, rule{"-p", "ipv6-icmp", "-m", "icmp6", "--icmpv6-type", typ, "-m", "owner", "!", "--uid-owner", anyUser, "-j", "ACCEPT"})
		}
	} else {
		rules = append(rules, rule{"-d", "127.0.0.11/32", "-j", "REJECT", "--reject-with", unreachable})
	}
	return append(rules,
		rule{"-o", "lo", "-p", "udp", "-m", "udp", "--dport", "53", "-j", "REJECT", "--reject-with", unreachable},
		rule{"-o", "lo", "-p", "tcp", "-m", "tcp", "--dport", "53", "-j", "REJECT", "--reject-with", "tcp-reset"},
		rule{"-o", "lo", "-j", "ACCEPT"},
		rule{"-p", "tcp", "-j", "REJECT", "--reject-with", "tcp-reset"},
		rule{"-j", "REJECT", "--reject-with", unreachable},
	)
}

// listing returns the exact `iptables -S SANDGATE-EGRESS` output Install
// produces for these rules, one line per element.
func listing(want []rule) []string {
	lines := []string{"-N " + Chain}
	for _, ru := range want {
		lines = append(lines, ru.line(Chain))
	}
	return lines
}

// jumpLine is rule 1 of OUTPUT as `iptables -S OUTPUT` prints it.
var jumpLine = jump.line(output)

// isRule reports whether a listing line is a rule (-A), not a chain line
// (-N/-P) or a comment a backend adds (iptables-nft warns about legacy
// tables with a "#" line).
func isRule(line string) bool {
	return strings.HasPrefix(line, "-A ")
}

// jumpsToChain reports whether an OUTPUT rule sends packets into the own
// chain, with or without extra matches (-j or -g).
func jumpsToChain(line string) bool {
	f := strings.Fields(line)
	for i := 0; i+1 < len(f); i++ {
		if (f[i] == "-j" || f[i] == "-g") && f[i+1] == Chain {
			return true
		}
	}
	return false
}
