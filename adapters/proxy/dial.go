package proxy

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"strconv"

	"github.com/sandgate/sandgate/core/egress"
)

// dialError is why the proxy did not get a connection to an upstream: the
// status and fixed reason the client sees, and for a refusal the verdict.
// Its text names the target and the cause, never a secret (the proxy has
// none at dial time).
type dialError struct {
	status  int
	reason  string
	verdict egress.Verdict // Allowed false for a refusal; zero otherwise
	err     error
}

func (e *dialError) Error() string {
	if e.err == nil {
		return "dial: " + e.reason + " (" + e.verdict.String() + ")"
	}
	return "dial: " + e.reason + ": " + e.err.Error()
}

func (e *dialError) Unwrap() error { return e.err }

func refused(v egress.Verdict) *dialError {
	return &dialError{status: http.StatusForbidden, reason: reasonDenied, verdict: v}
}

// hostport renders a target as net.Dial and a Host header spell it.
func hostport(t egress.Target) string {
	return net.JoinHostPort(t.Host.String(), strconv.Itoa(int(t.Port)))
}

// dial is the dial floor (C-GW-5): it resolves t once (unless it is an IP
// literal), refuses the target if any candidate address fails AdmitAddr —
// a resolver that answers a public and an internal address is rebinding —
// and dials exactly the checked addresses, in order, until one answers. The
// verdict is the floor's when it needed an opening entry ("opened:…"), else
// the zero Verdict.
func (p *Proxy) dial(ctx context.Context, pol *egress.Policy, t egress.Target) (net.Conn, egress.Verdict, error) {
	ctx, cancel := context.WithTimeout(ctx, p.opts.DialTimeout)
	defer cancel()
	addrs := []netip.Addr{t.Host.Addr}
	if !t.Host.IsIP() {
		var err error
		addrs, err = p.resolve(ctx, t.Host.Name)
		if err == nil && len(addrs) == 0 {
			err = errNoAddress
		}
		if err != nil {
			return nil, egress.Verdict{}, &dialError{status: http.StatusBadGateway, reason: reasonDNS, err: err}
		}
	}
	var floor egress.Verdict
	for i, a := range addrs {
		a = a.WithZone("")
		addrs[i] = a
		v := pol.AdmitAddr(netip.AddrPortFrom(a, t.Port))
		if !v.Allowed {
			return nil, v, refused(v)
		}
		if v.Rule != egress.RulePublic && floor.Rule == "" {
			floor = v
		}
	}
	var last error
	for _, a := range addrs {
		conn, err := p.dialAddr(ctx, "tcp", netip.AddrPortFrom(a, t.Port).String())
		if err == nil {
			return conn, floor, nil
		}
		last = err
		if ctx.Err() != nil {
			break
		}
	}
	if isTimeout(last) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return nil, egress.Verdict{}, &dialError{status: http.StatusGatewayTimeout, reason: reasonDialTimeout, err: last}
	}
	return nil, egress.Verdict{}, &dialError{status: http.StatusBadGateway, reason: reasonUpstream, err: last}
}

var errNoAddress = errors.New("no address")

// dialTransport is the http.Transport's DialContext: it decides on addr
// again with the policy in force now (a pooled dial may outlive the request
// that started it) and dials through the floor.
func (p *Proxy) dialTransport(ctx context.Context, _, addr string) (net.Conn, error) {
	pol := p.policy.Load()
	t, v := pol.AdmitTarget(addr)
	if !v.Allowed {
		return nil, refused(v)
	}
	conn, _, err := p.dial(ctx, pol, t)
	return conn, err
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
