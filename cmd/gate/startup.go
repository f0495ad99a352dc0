package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/sandgate/sandgate/adapters/httpapi"
	"github.com/sandgate/sandgate/core/gatewire"
)

// shutdownGrace bounds the proxy's shutdown and the telemetry flush.
const shutdownGrace = 5 * time.Second

// system is the startup's side effects, one method a step, in the order run
// calls them (CONTRACT C-FW-1). The real one is linuxSystem; tests record
// the calls of a fake.
type system interface {
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
	// prefixes.
	DenyList(ctx context.Context, controlPlaneHost string) ([]netip.Prefix, error)
	// Listen opens the proxy's listener.
	Listen(addr netip.AddrPort) (net.Listener, error)
}

// egressProxy is what the gate needs of adapters/proxy.Proxy.
type egressProxy interface {
	SetConfig(cfg gatewire.Config) error
	Revoke()
	CACertPEM() []byte
	Serve(ln net.Listener) error
	Shutdown(ctx context.Context) error
}

// proxyOptions are the settings the gate hands to the proxy's constructor.
type proxyOptions struct {
	Deny      []netip.Prefix
	Tracer    trace.TracerProvider
	Logger    *slog.Logger
	SessionID string
	// Verdicts counts the proxy's verdicts for the reports.
	Verdicts *gatewire.Tally
	// TunnelIdle is GATE_TUNNEL_IDLE_TIMEOUT (0: the proxy's default).
	TunnelIdle time.Duration
}

// deps are the gate's collaborators; main wires the real ones.
type deps struct {
	sys       system
	newTracer func(ctx context.Context) (trace.TracerProvider, func(context.Context) error, error)
	newProxy  func(opts proxyOptions) (egressProxy, error)
	// fetcher fetches the config; nil builds the real one from the settings.
	fetcher fetcher
	// reporter sends verdict reports; nil builds the real one.
	reporter reporter
	log      *slog.Logger
	// ready, if set, is called once the gate is ready (tests await it).
	ready func()
}

// serve runs the gate until ctx is done: the startup steps in the order of
// C-FW-1, each failure returning before anything listens (fail closed), then
// the proxy and the config loop. It returns nil after a clean shutdown. The
// firewall rules stay when it returns: a dead gate fails closed.
func serve(ctx context.Context, s gatewire.Env, d deps) (err error) {
	if err := secure(s, d.sys); err != nil {
		return err
	}
	deny, err := d.sys.DenyList(ctx, s.ControlPlaneHost())
	if err != nil {
		return fmt.Errorf("deny list: %w", err)
	}
	tp, stopTracer, err := d.newTracer(ctx)
	if err != nil {
		return fmt.Errorf("telemetry: %w", err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
		defer cancel()
		if serr := stopTracer(sctx); serr != nil {
			d.log.Warn("telemetry flush failed", "err", serr)
		}
	}()
	tally := &gatewire.Tally{}
	p, err := d.newProxy(proxyOptions{Deny: deny, Tracer: tp, Logger: d.log, SessionID: string(s.SessionID), Verdicts: tally, TunnelIdle: s.TunnelIdle})
	if err != nil {
		return fmt.Errorf("proxy: %w", err)
	}
	ln, err := d.sys.Listen(s.Addr)
	if err != nil {
		return fmt.Errorf("listen on GATE_ADDR %s: %w", s.Addr, err)
	}
	return run(ctx, s, d, p, ln, tally)
}

// secure runs the privileged steps of C-FW-1: the firewall, the CA
// directory and the privilege drop. With GATE_FIREWALL=preinstalled an
// init step did the firewall; the gate then only checks that it holds no
// privilege and clears the CA file an earlier run of it left.
func secure(s gatewire.Env, sys system) error {
	if s.FirewallPreinstalled {
		if err := sys.VerifyUnprivileged(s.UID, s.GID); err != nil {
			return fmt.Errorf("GATE_FIREWALL=preinstalled: %w", err)
		}
		if err := sys.ClearCAFile(s.CAFile); err != nil {
			return fmt.Errorf("GATE_CA_FILE: %w", err)
		}
		return nil
	}
	if err := sys.InstallFirewall(s.UID); err != nil {
		return fmt.Errorf("firewall: %w", err)
	}
	if err := sys.PrepareCADir(s.CAFile, s.UID, s.GID); err != nil {
		return fmt.Errorf("GATE_CA_FILE directory: %w", err)
	}
	if err := sys.DropPrivileges(s.UID, s.GID); err != nil {
		return fmt.Errorf("drop privileges: %w", err)
	}
	return nil
}

// run serves the proxy on ln, keeps its config fresh and reports the
// verdicts counted in tally until ctx is done or the proxy fails; then it
// shuts the proxy down within shutdownGrace and sends a last report.
func run(ctx context.Context, s gatewire.Env, d deps, p egressProxy, ln net.Listener, tally *gatewire.Tally) error {
	served := make(chan error, 1)
	go func() { served <- p.Serve(ln) }()
	f := d.fetcher
	if f == nil {
		f = httpapi.NewGateConfigClient(s.ConfigURL(), s.Token)
	}
	l := &loop{
		fetch: f, proxy: p, caFile: s.CAFile, interval: s.FetchInterval,
		log: d.log, ready: d.ready, readyAttrs: []any{"addr", s.Addr.String(), "session", string(s.SessionID)},
	}
	rep := d.reporter
	if rep == nil {
		rep = httpapi.NewGateReportClient(s.ReportURL(), s.Token)
	}
	rl := &reportLoop{tally: tally, send: rep, interval: min(s.FetchInterval, maxReportInterval), log: d.log}
	lctx, stopLoop := context.WithCancel(ctx)
	looped := make(chan struct{}, 2)
	go func() {
		defer func() { looped <- struct{}{} }()
		l.run(lctx)
	}()
	go func() {
		defer func() { looped <- struct{}{} }()
		rl.run(lctx)
	}()
	var serveErr error
	select {
	case <-ctx.Done():
		d.log.Info("gate stopping", "cause", context.Cause(ctx))
	case serveErr = <-served:
		// Serve returns only after Shutdown; anything else is a failure.
		if serveErr == nil {
			serveErr = errors.New("proxy stopped serving")
		}
	}
	stopLoop()
	<-looped
	<-looped
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	defer cancel()
	shutErr := p.Shutdown(sctx)
	// The requests Shutdown waited for are counted now.
	rl.flush(sctx)
	if serveErr == nil {
		// A Shutdown that won the race with Serve's start makes Serve
		// return http.ErrServerClosed: that is a clean stop too.
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			serveErr = err
		}
	}
	return errors.Join(serveErr, shutErr)
}
