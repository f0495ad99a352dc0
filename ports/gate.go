package ports

import (
	"context"
	"net"
	"net/netip"

	"github.com/sandgate/sandgate/core/gatewire"
)

// The gate's ports: what its run logic (app/gate) needs of the host, of its
// egress proxy and of the control plane. cmd/gate wires the real ones
// (adapters/firewall, adapters/proxy, adapters/httpapi and the process's own
// system calls); app/gate's tests use fakes.

// GateSystem is the gate's startup side effects, one method a step, in the
// order app/gate calls them (CONTRACT C-FW-1). Each error stops the startup
// before anything listens.
type GateSystem interface {
	// InstallFirewall applies and verifies the owner-match rules for IPv4
	// and IPv6 (adapters/firewall Open + Install).
	InstallFirewall(uid uint32) error
	// PrepareCADir creates the CA file's directory owned by uid:gid and
	// removes a CA file an earlier run left (its key died with that run).
	PrepareCADir(caFile string, uid, gid uint32) error
	// DropPrivileges sets the groups to none, then the gid, then the uid, and
	// verifies that root cannot be regained.
	DropPrivileges(uid, gid uint32) error
	// VerifyUnprivileged checks, without changing anything, what
	// DropPrivileges verifies: the process runs as uid:gid with no
	// supplementary group and no capability (GATE_FIREWALL=preinstalled).
	VerifyUnprivileged(uid, gid uint32) error
	// ClearCAFile creates the CA file's directory if needed and removes a CA
	// file an earlier run left, as the gate's own uid (the directory is one
	// the gate may write: Kubernetes' emptyDir).
	ClearCAFile(caFile string) error
	// DenyList returns the addresses the proxy never dials: the control
	// plane host's and the gate's own interfaces', as single-address
	// prefixes. A failed resolution is an error, never a shorter list.
	DenyList(ctx context.Context, controlPlaneHost string) ([]netip.Prefix, error)
	// Listen opens the proxy's listener.
	Listen(addr netip.AddrPort) (net.Listener, error)
}

// GateProxy is the gate's egress proxy as its run logic drives it
// (adapters/proxy.Proxy).
type GateProxy interface {
	// SetConfig compiles cfg and puts it in force; an invalid config returns
	// the error and keeps the last good one (C-GW-1). Its errors never quote
	// a secret.
	SetConfig(cfg gatewire.Config) error
	// Revoke denies everything from now on and refuses later configs.
	Revoke()
	// CACertPEM returns the interception CA's certificate, or nil before the
	// first good config.
	CACertPEM() []byte
	// Serve serves ln until Shutdown, then returns nil (or
	// http.ErrServerClosed when Shutdown came first); any other return is a
	// failure.
	Serve(ln net.Listener) error
	// Shutdown stops serving, waiting for requests in flight until ctx is
	// done.
	Shutdown(ctx context.Context) error
}

// GateOutcome classifies one exchange of the gate with its control plane.
type GateOutcome int

const (
	// GateFetched: the control plane answered 200 with a config, or took a
	// report (2xx).
	GateFetched GateOutcome = iota
	// GateRevoked: 401, the gate token is no longer valid (C-GW-1).
	GateRevoked
	// GateFailed: anything else; the gate keeps its last good config.
	GateFailed
)

// GateConfigFetcher fetches the gate config once (gatewire.ConfigPath).
type GateConfigFetcher interface {
	// Fetch returns the body of a 200, or the outcome and why not. err
	// never contains the token.
	Fetch(ctx context.Context) (body []byte, o GateOutcome, err error)
}

// GateReporter delivers one verdict report (gatewire.ReportPath).
type GateReporter interface {
	// Report sends r and classifies the answer like a fetch: GateFetched
	// (the control plane took it), GateRevoked (401) or GateFailed. err
	// never contains the token.
	Report(ctx context.Context, r gatewire.Report) (GateOutcome, error)
}
