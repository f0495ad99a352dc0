package gatewire

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
)

// The gate's environment (C-GATE-1): the names Environ writes and ParseEnv
// reads. OTEL_* are the OpenTelemetry SDK's own; the gate does not parse
// them beyond reading them back.
const (
	EnvControlPlane  = "CONTROLPLANE_URL"
	EnvToken         = "GATE_TOKEN"
	EnvSessionID     = "GATE_SESSION_ID"
	EnvUID           = "GATE_UID"
	EnvGID           = "GATE_GID"
	EnvAddr          = "GATE_ADDR"
	EnvFetchInterval = "GATE_FETCH_INTERVAL"
	EnvTunnelIdle    = "GATE_TUNNEL_IDLE_TIMEOUT"
	EnvCAFile        = "GATE_CA_FILE"
	EnvFirewall      = "GATE_FIREWALL"
	EnvOTelEndpoint  = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvOTelInsecure  = "OTEL_EXPORTER_OTLP_INSECURE"
)

// Values of EnvFirewall.
const (
	firewallSelf         = "self"
	firewallPreinstalled = "preinstalled"
)

// Defaults and bounds of the environment.
const (
	// DefaultFetchInterval is how often the gate fetches its config when
	// EnvFetchInterval is unset.
	DefaultFetchInterval = 30 * time.Second
	minFetchInterval     = time.Second
	minTunnelIdle        = time.Second
	maxID                = 1<<31 - 1
)

// Env is the gate's environment: what a provider hands the gate container
// (Environ) and what the gate binary reads back (ParseEnv).
type Env struct {
	// ControlPlane is CONTROLPLANE_URL: http or https, a host, no user info,
	// query or fragment.
	ControlPlane string
	// Token is GATE_TOKEN, the only secret here. Never printed.
	Token string
	// SessionID is GATE_SESSION_ID: the proxy's span attribute and its CA's
	// subject (the token alone does not tell the gate whose it is).
	SessionID domain.ID
	// UID and GID are GATE_UID and GATE_GID, 1..2^31-1 (default UID).
	UID, GID uint32
	// Addr is GATE_ADDR, a loopback address and a non-zero port (default
	// ProxyAddr).
	Addr netip.AddrPort
	// FetchInterval is GATE_FETCH_INTERVAL, at least a second (default
	// DefaultFetchInterval; Environ omits 0).
	FetchInterval time.Duration
	// TunnelIdle is GATE_TUNNEL_IDLE_TIMEOUT: a tunnel or upgraded
	// connection that moves no byte for that long is closed (at least a
	// second; 0, the default, is the proxy's own default).
	TunnelIdle time.Duration
	// CAFile is GATE_CA_FILE, an absolute clean path (default CAFile).
	CAFile string
	// FirewallPreinstalled is GATE_FIREWALL=preinstalled: an init step of
	// the same network namespace (Kubernetes' netsetup container running
	// `gate -firewall`) installed and verified the firewall, and the gate
	// starts as GATE_UID:GATE_GID with no capability at all. It then skips
	// the firewall and the privilege drop and verifies instead that it holds
	// no privilege. Default ("" or "self"): it does both itself.
	FirewallPreinstalled bool
	// OTelEndpoint and OTelInsecure are the deployment's collector
	// (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_INSECURE=true), read
	// by the OpenTelemetry SDK itself; empty: none.
	OTelEndpoint string
	OTelInsecure bool
}

// NewEnv is the environment of a session's gate with every default of
// CONTRACT §0: the gate uid for both ids, the proxy address and the CA file.
func NewEnv(sid domain.ID, controlPlane, token string) Env {
	return Env{
		ControlPlane: controlPlane,
		Token:        token,
		SessionID:    sid,
		UID:          UID,
		GID:          UID,
		Addr:         netip.MustParseAddrPort(ProxyAddr),
		CAFile:       CAFile,
	}
}

// Environ returns the environment as NAME=value lines, in a fixed order.
// Zero durations, a self-installed firewall and an empty collector are
// omitted. The token is in it: callers must not log the result.
func (e Env) Environ() []string {
	env := []string{
		EnvSessionID + "=" + e.SessionID.String(),
		EnvControlPlane + "=" + e.ControlPlane,
		EnvToken + "=" + e.Token,
		EnvUID + "=" + strconv.FormatUint(uint64(e.UID), 10),
		EnvGID + "=" + strconv.FormatUint(uint64(e.GID), 10),
		EnvAddr + "=" + e.Addr.String(),
		EnvCAFile + "=" + e.CAFile,
	}
	if e.FetchInterval != 0 {
		env = append(env, EnvFetchInterval+"="+e.FetchInterval.String())
	}
	if e.TunnelIdle != 0 {
		env = append(env, EnvTunnelIdle+"="+e.TunnelIdle.String())
	}
	if e.OTelEndpoint != "" {
		env = append(env, EnvOTelEndpoint+"="+e.OTelEndpoint)
		if e.OTelInsecure {
			env = append(env, EnvOTelInsecure+"=true")
		}
	}
	if e.FirewallPreinstalled {
		env = append(env, EnvFirewall+"="+firewallPreinstalled)
	}
	return env
}

// ConfigURL is the gate config endpoint under the control plane's URL,
// keeping a path prefix the URL may have; "" if ControlPlane does not parse
// (ParseEnv refuses such an Env).
func (e Env) ConfigURL() string { return e.endpoint(ConfigPath) }

// ReportURL is where the gate reports its verdict counts (see ConfigURL).
func (e Env) ReportURL() string { return e.endpoint(ReportPath) }

// ControlPlaneHost is the host name of the control plane's URL (no port),
// "" if it does not parse.
func (e Env) ControlPlaneHost() string {
	u, err := url.Parse(e.ControlPlane)
	if err != nil {
		return ""
	}
	return u.Hostname()
}

func (e Env) endpoint(path string) string {
	u, err := url.Parse(e.ControlPlane)
	if err != nil {
		return ""
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	u.RawPath = ""
	return u.String()
}

// ParseEnv reads and validates the whole environment before anything
// happens. Every problem is reported, each error starting with its
// variable's name; no error quotes GATE_TOKEN.
func ParseEnv(getenv func(string) string) (Env, error) {
	var e Env
	var errs []error
	check := func(name string, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
	}
	var err error
	e.ControlPlane = getenv(EnvControlPlane)
	check(EnvControlPlane, checkControlPlane(e.ControlPlane))
	e.Token = getenv(EnvToken)
	check(EnvToken, checkToken(e.Token))
	e.SessionID, err = domain.ParseSessionID(getenv(EnvSessionID))
	check(EnvSessionID, err)
	e.UID, err = ParseID(getenv(EnvUID))
	check(EnvUID, err)
	e.GID, err = ParseID(getenv(EnvGID))
	check(EnvGID, err)
	e.Addr, err = ParseAddr(getenv(EnvAddr))
	check(EnvAddr, err)
	e.FetchInterval, err = parseInterval(getenv(EnvFetchInterval))
	check(EnvFetchInterval, err)
	e.TunnelIdle, err = parseTunnelIdle(getenv(EnvTunnelIdle))
	check(EnvTunnelIdle, err)
	e.CAFile, err = ParseCAFile(getenv(EnvCAFile))
	check(EnvCAFile, err)
	e.FirewallPreinstalled, err = parseFirewallMode(getenv(EnvFirewall))
	check(EnvFirewall, err)
	e.OTelEndpoint = getenv(EnvOTelEndpoint)
	e.OTelInsecure = strings.EqualFold(getenv(EnvOTelInsecure), "true")
	if len(errs) > 0 {
		return Env{}, errors.Join(errs...)
	}
	return e, nil
}

func checkControlPlane(v string) error {
	if v == "" {
		return errors.New("required")
	}
	u, err := url.Parse(v)
	switch {
	case err != nil:
		// url's error quotes the input; a URL is not a secret, but keep
		// the message short and fixed.
		return errors.New("not a URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return errors.New("want an http or https URL")
	case u.Host == "" || u.Hostname() == "":
		return errors.New("no host")
	case u.User != nil:
		return errors.New("user info is not allowed (the gate authenticates with GATE_TOKEN)")
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return errors.New("a query or fragment is not allowed")
	}
	return nil
}

func checkToken(v string) error {
	if v == "" {
		return errors.New("required")
	}
	// ValidateToken never quotes the token.
	return ValidateToken(v)
}

func parseFirewallMode(v string) (preinstalled bool, err error) {
	switch v {
	case "", firewallSelf:
		return false, nil
	case firewallPreinstalled:
		return true, nil
	}
	return false, fmt.Errorf("%q: want %q or %q", domain.Clip(v), firewallSelf, firewallPreinstalled)
}

// ParseID reads GATE_UID or GATE_GID: a plain integer from 1 to 2^31-1, UID
// when empty.
func ParseID(v string) (uint32, error) {
	if v == "" {
		return UID, nil
	}
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil || n < 1 || n > maxID || strconv.FormatUint(n, 10) != v {
		return 0, fmt.Errorf("%q: want a plain integer from 1 to %d", domain.Clip(v), maxID)
	}
	return uint32(n), nil
}

// ParseAddr reads GATE_ADDR: a loopback address and a non-zero port,
// ProxyAddr when empty.
func ParseAddr(v string) (netip.AddrPort, error) {
	if v == "" {
		v = ProxyAddr
	}
	ap, err := netip.ParseAddrPort(v)
	switch {
	case err != nil:
		return netip.AddrPort{}, fmt.Errorf("%q: want a loopback IP and a port, e.g. %s", domain.Clip(v), ProxyAddr)
	case !ap.Addr().IsLoopback() || ap.Addr().Zone() != "":
		return netip.AddrPort{}, fmt.Errorf("%q: only a loopback address is allowed (the proxy must never be reachable from outside the sandbox)", domain.Clip(v))
	case ap.Port() == 0:
		return netip.AddrPort{}, fmt.Errorf("%q: port 0", domain.Clip(v))
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), nil
}

func parseInterval(v string) (time.Duration, error) {
	if v == "" {
		return DefaultFetchInterval, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < minFetchInterval {
		return 0, fmt.Errorf("%q: want a Go duration of at least %v, e.g. 30s", domain.Clip(v), minFetchInterval)
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
		return 0, fmt.Errorf("%q: want a Go duration of at least %v, e.g. 5m", domain.Clip(v), minTunnelIdle)
	}
	return d, nil
}

// ParseCAFile reads GATE_CA_FILE: an absolute, clean file path, CAFile when
// empty.
func ParseCAFile(v string) (string, error) {
	if v == "" {
		return CAFile, nil
	}
	if !filepath.IsAbs(v) || filepath.Clean(v) != v || v == "/" || strings.ContainsRune(v, 0) {
		return "", fmt.Errorf("%q: want an absolute, clean file path", domain.Clip(v))
	}
	return v, nil
}
