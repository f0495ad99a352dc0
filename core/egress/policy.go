package egress

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/gatewire"
)

// Rules of a verdict that are not an allowed_hosts entry. Together with
// "allowed_hosts:<entry>", "opened:<entry>" and "floor:<reason>" they are the
// values of the B-5 span attribute for the verdict; none carries a secret.
const (
	RuleNoConfig       = "no-config"        // no good config fetched yet (or the token was revoked)
	RuleUnrestricted   = "unrestricted"     // the policy admits every public host
	RuleNotAllowed     = "not-allowed"      // limited, and no allowed_hosts entry matches
	RuleInvalidHost    = "invalid-host"     // the target is not host:port
	RuleNonCanonicalIP = "non-canonical-ip" // 2130706433, 127.1, …
	RuleDeniedAddress  = "denied-address"   // the gate's own or the control plane's address
	RulePublic         = "public"           // the floor: a public address
)

// Verdict is a policy decision, ready for a span: Allowed, and the rule that
// admitted the request or the reason it was refused.
type Verdict struct {
	Allowed bool
	Rule    string
}

// String renders "allowed (rule)" or "denied (rule)" for logs.
func (v Verdict) String() string {
	if v.Allowed {
		return "allowed (" + v.Rule + ")"
	}
	return "denied (" + v.Rule + ")"
}

func allow(rule string) Verdict { return Verdict{Allowed: true, Rule: rule} }
func deny(rule string) Verdict  { return Verdict{Rule: rule} }

// Options are the gate's own settings that no config may change.
type Options struct {
	// Deny are addresses the gate never dials even when an allowed_hosts
	// entry covers them: its own addresses and the control plane's (a
	// sandbox must not reach the config endpoint or the executor API).
	Deny []netip.Prefix
}

// Policy is a compiled, immutable gate config. A nil *Policy is the state
// before the first good config (or after a revoked token): it denies
// everything.
type Policy struct {
	limited     bool
	allowed     []Pattern
	credentials []credential
	deny        []netip.Prefix
}

// credential is a gatewire.Credential with its host patterns parsed.
type credential struct {
	gatewire.Credential
	hosts []Pattern
}

// Compile validates cfg and parses every host pattern. The error names the
// field and wraps gatewire.ErrInvalid (and ErrInvalidPattern for a
// pattern); the gate then keeps its last good Policy.
func Compile(cfg gatewire.Config, opts Options) (*Policy, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	p := &Policy{limited: cfg.Networking.Type == domain.NetLimited, deny: append([]netip.Prefix(nil), opts.Deny...)}
	var err error
	if p.allowed, err = parsePatterns("networking.allowed_hosts", cfg.Networking.AllowedHosts); err != nil {
		return nil, err
	}
	for i, cr := range cfg.Credentials {
		hosts, err := parsePatterns(fmt.Sprintf("credentials[%d].allowed_hosts", i), cr.AllowedHosts)
		if err != nil {
			return nil, err
		}
		p.credentials = append(p.credentials, credential{Credential: cr, hosts: hosts})
	}
	return p, nil
}

func parsePatterns(field string, entries []string) ([]Pattern, error) {
	out := make([]Pattern, 0, len(entries))
	for i, e := range entries {
		pat, err := ParsePattern(e)
		if err != nil {
			return nil, fmt.Errorf("%w: %s[%d]: %w", gatewire.ErrInvalid, field, i, err)
		}
		out = append(out, pat)
	}
	return out, nil
}

// AdmitTarget decides on a request target before anything is resolved, so a
// refused name is never looked up (C-GW-2). It returns the parsed target for
// AdmitAddr and Credentials.
func (p *Policy) AdmitTarget(hostport string) (Target, Verdict) {
	if p == nil {
		return Target{}, deny(RuleNoConfig)
	}
	t, err := ParseTarget(hostport)
	if err != nil {
		if errors.Is(err, ErrNonCanonicalIP) {
			return Target{}, deny(RuleNonCanonicalIP)
		}
		return Target{}, deny(RuleInvalidHost)
	}
	return t, p.admit(t)
}

// admit matches the target's host and port against allowed_hosts; an
// unrestricted policy admits every port of every (public) host.
func (p *Policy) admit(t Target) Verdict {
	if !p.limited {
		return allow(RuleUnrestricted)
	}
	for _, pat := range p.allowed {
		if pat.Match(t) {
			return allow("allowed_hosts:" + pat.String())
		}
	}
	return deny(RuleNotAllowed)
}

// AdmitAddr is the dial floor for one resolved address and port of an
// admitted target (C-GW-5), in both policy modes: the gate's deny addresses
// never pass; a public address passes; an internal one passes only when an
// IP or CIDR entry of allowed_hosts covers it on that port (the operator
// opened it), except unspecified, multicast and broadcast addresses, which
// are never a destination. The proxy dials exactly the address it checked
// (no second resolution).
func (p *Policy) AdmitAddr(ap netip.AddrPort) Verdict {
	if p == nil {
		return deny(RuleNoConfig)
	}
	a := ap.Addr().WithZone("")
	for _, d := range p.deny {
		for _, x := range append(embeddedV4(a), a, a.Unmap()) {
			if d.Contains(x) {
				return deny(RuleDeniedAddress)
			}
		}
	}
	reason := Classify(a)
	switch reason {
	case "":
		return allow(RulePublic)
	case ReasonUnspecified, ReasonMulticast, ReasonBroadcast, ReasonInvalid:
		return deny("floor:" + string(reason))
	}
	for _, pat := range p.allowed {
		if pat.Contains(a) && pat.MatchPort(ap.Port()) {
			return allow("opened:" + pat.String())
		}
	}
	return deny("floor:" + string(reason))
}

// Decide is the whole decision for one dial: the target (CONNECT authority or
// absolute-URI host with port) and the address it resolved to. An allowed
// verdict carries the target's rule, or the opening entry when the floor
// needed one.
func Decide(p *Policy, hostport string, resolved netip.Addr) Verdict {
	t, v := p.AdmitTarget(hostport)
	if !v.Allowed {
		return v
	}
	if f := p.AdmitAddr(netip.AddrPortFrom(resolved, t.Port)); !f.Allowed || f.Rule != RulePublic {
		return f
	}
	return v
}

// Reason folds the verdict's rule into the bounded set of report reasons
// (gatewire.Reason*): the rules that name an allowed_hosts entry or a
// floor reason lose the entry, anything unknown becomes "other". Metrics
// count by it; spans keep the full rule.
func (v Verdict) Reason() string {
	switch {
	case strings.HasPrefix(v.Rule, "allowed_hosts:"):
		return gatewire.ReasonAllowedHost
	case strings.HasPrefix(v.Rule, "opened:"):
		return gatewire.ReasonOpened
	case strings.HasPrefix(v.Rule, "floor:"):
		return gatewire.ReasonFloor
	}
	return gatewire.Reason(v.Rule)
}
