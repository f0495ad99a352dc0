package main

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/core/session"
)

// Defaults of the environment.
const (
	defaultAddr          = sandbox.GateProxyAddr
	defaultFetchInterval = 30 * time.Second
	minFetchInterval     = time.Second
	defaultCAFile        = "/run/sandgate/ca.pem"
	minTunnelIdle        = time.Second
	maxID                = 1<<31 - 1
)

// settings is the gate's validated environment.
type settings struct {
	// ControlPlane is CONTROLPLANE_URL: http or https, a host, no user
	// info, query or fragment.
	ControlPlane *url.URL
	// Token is GATE_TOKEN. Never printed.
	Token string
	// SessionID is GATE_SESSION_ID: the proxy's span attribute and its CA's
	// subject (the token alone does not tell the gate whose it is).
	SessionID domain.ID
	// UID and GID are GATE_UID and GATE_GID, 1..2^31-1.
	UID, GID uint32
	// Addr is GATE_ADDR, a loopback address and a non-zero port.
	Addr netip.AddrPort
	// FetchInterval is GATE_FETCH_INTERVAL, at least a second.
	FetchInterval time.Duration
	// TunnelIdle is GATE_TUNNEL_IDLE_TIMEOUT: a tunnel or upgraded
	// connection that moves no byte for that long is closed (at least a
	// second; default proxy.DefaultTunnelIdleTimeout, 0 here).
	TunnelIdle time.Duration
	// CAFile is GATE_CA_FILE, an absolute clean path.
	CAFile string
	// FirewallPreinstalled is GATE_FIREWALL=preinstalled: an init step of
	// the same network namespace (Kubernetes' netsetup container running
	// `gate -firewall`) installed and verified the firewall, and this
	// process starts as GATE_UID:GATE_GID with no capability at all. It then
	// skips the firewall and the privilege drop and verifies instead that it
	// holds no privilege. Default ("" or "self"): it does both itself.
	FirewallPreinstalled bool
}

// ConfigURL is the gate config endpoint under the control plane's URL
// (CONTRACT §0), keeping a path prefix the URL may have.
func (s settings) ConfigURL() string { return s.endpoint("/internal/v1/gate/config") }

// ReportURL is where the gate reports its verdict counts.
func (s settings) ReportURL() string { return s.endpoint("/internal/v1/gate/report") }

func (s settings) endpoint(path string) string {
	u := *s.ControlPlane
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	u.RawPath = ""
	return u.String()
}

// parseEnv reads and validates the whole environment before anything
// happens. Every problem is reported, each naming its variable; no error
// quotes GATE_TOKEN.
func parseEnv(getenv func(string) string) (settings, error) {
	var s settings
	var errs []error
	check := func(name string, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
	}
	var err error
	s.ControlPlane, err = parseControlPlane(getenv("CONTROLPLANE_URL"))
	check("CONTROLPLANE_URL", err)
	s.Token = getenv("GATE_TOKEN")
	check("GATE_TOKEN", validateToken(s.Token))
	s.SessionID = domain.ID(getenv("GATE_SESSION_ID"))
	check("GATE_SESSION_ID", domain.ValidateSessionID(s.SessionID))
	s.UID, err = parseID(getenv("GATE_UID"))
	check("GATE_UID", err)
	s.GID, err = parseID(getenv("GATE_GID"))
	check("GATE_GID", err)
	s.Addr, err = parseAddr(getenv("GATE_ADDR"))
	check("GATE_ADDR", err)
	s.FetchInterval, err = parseInterval(getenv("GATE_FETCH_INTERVAL"))
	check("GATE_FETCH_INTERVAL", err)
	s.TunnelIdle, err = parseTunnelIdle(getenv("GATE_TUNNEL_IDLE_TIMEOUT"))
	check("GATE_TUNNEL_IDLE_TIMEOUT", err)
	s.CAFile, err = parseCAFile(getenv("GATE_CA_FILE"))
	check("GATE_CA_FILE", err)
	s.FirewallPreinstalled, err = parseFirewallMode(getenv("GATE_FIREWALL"))
	check("GATE_FIREWALL", err)
	if len(errs) > 0 {
		return settings{}, errors.Join(errs...)
	}
	return s, nil
}

func parseControlPlane(v string) (*url.URL, error) {
	if v == "" {
		return nil, errors.New("required")
	}
	u, err := url.Parse(v)
	switch {
	case err != nil:
		// url's error quotes the input; a URL is not a secret, but keep
		// the message short and fixed.
		return nil, errors.New("not a URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, errors.New("want an http or https URL")
	case u.Host == "" || u.Hostname() == "":
		return nil, errors.New("no host")
	case u.User != nil:
		return nil, errors.New("user info is not allowed (the gate authenticates with GATE_TOKEN)")
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return nil, errors.New("a query or fragment is not allowed")
	}
	return u, nil
}

func validateToken(v string) error {
	if v == "" {
		return errors.New("required")
	}
	// ValidateToken never quotes the token.
	return session.ValidateToken(v)
}

// Values of GATE_FIREWALL.
const (
	firewallSelf         = "self"
	firewallPreinstalled = "preinstalled"
)

func parseFirewallMode(v string) (preinstalled bool, err error) {
	switch v {
	case "", firewallSelf:
		return false, nil
	case firewallPreinstalled:
		return true, nil
	}
	return false, fmt.Errorf("%q: want %q or %q", clip(v), firewallSelf, firewallPreinstalled)
}

func parseID(v string) (uint32, error) {
	if v == "" {
		return sandbox.DefaultGateUID, nil
	}
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil || n < 1 || n > maxID || strconv.FormatUint(n, 10) != v {
		return 0, fmt.Errorf("%q: want a plain integer from 1 to %d", clip(v), maxID)
	}
	return uint32(n), nil
}

func parseAddr(v string) (netip.AddrPort, error) {
	if v == "" {
		v = defaultAddr
	}
	ap, err := netip.ParseAddrPort(v)
	switch {
	case err != nil:
		return netip.AddrPort{}, fmt.Errorf("%q: want a loopback IP and a port, e.g. %s", clip(v), defaultAddr)
	case !ap.Addr().IsLoopback() || ap.Addr().Zone() != "":
		return netip.AddrPort{}, fmt.Errorf("%q: only a loopback address is allowed (the proxy must never be reachable from outside the sandbox)", clip(v))
	case ap.Port() == 0:
		return netip.AddrPort{}, fmt.Errorf("%q: port 0", clip(v))
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), nil
}

func parseInterval(v string) (time.Duration, error) {
	if v == "" {
		return defaultFetchInterval, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < minFetchInterval {
		return 0, fmt.Errorf("%q: want a Go duration of at least %v, e.g. 30s", clip(v), minFetchInterval)
	}
	return d, nil
}

// parseTunnelIdle reads a duration of at least a second; "" is the
// proxy's default.
func parseTunnelIdle(v string) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < minTunnelIdle {
		return 0, fmt.Errorf("%q: want a Go duration of at least %v, e.g. 5m", clip(v), minTunnelIdle)
	}
	return d, nil
}

func parseCAFile(v string) (string, error) {
	if v == "" {
		return defaultCAFile, nil
	}
	if !filepath.IsAbs(v) || filepath.Clean(v) != v || v == "/" || strings.ContainsRune(v, 0) {
		return "", fmt.Errorf("%q: want an absolute, clean file path", clip(v))
	}
	return v, nil
}

// clip bounds a quoted value in an error.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
