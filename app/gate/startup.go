package gate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"time"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/gatewire"
	"github.com/sandgate/sandgate/ports"
)

// shutdownGrace bounds the proxy's shutdown and the telemetry flush.
const shutdownGrace = 5 * time.Second

// ProxyOptions are the settings the gate hands to the proxy's constructor.
type ProxyOptions struct {
	// Deny are the addresses the proxy never dials (ports.GateSystem.DenyList).
	Deny      []netip.Prefix
	Logger    *slog.Logger
	SessionID domain.ID
	// Verdicts counts the proxy's verdicts for the reports.
	Verdicts *gatewire.Tally
	// TunnelIdle is GATE_TUNNEL_IDLE_TIMEOUT (0: the proxy's default).
	TunnelIdle time.Duration
}

// Deps are the gate's collaborators; cmd/gate wires the real ones. Every
// field but Ready is required.
type Deps struct {
	System ports.GateSystem
	// StartTelemetry starts the gate's tracing and returns its flush, which
	// Serve calls on the way out. It runs just before NewProxy, so the
	// wiring can hand the tracer it made to the proxy (this package names
	// no telemetry SDK type: the import rule keeps SDKs out of app).
	StartTelemetry func(ctx context.Context) (flush func(context.Context) error, err error)
	NewProxy       func(opts ProxyOptions) (ports.GateProxy, error)
	// Fetcher fetches the config (gatewire.ConfigPath).
	Fetcher ports.GateConfigFetcher
	// Reporter sends verdict reports (gatewire.ReportPath).
	Reporter ports.GateReporter
	Log      *slog.Logger
	// Ready, if set, is called once the gate is ready (tests await it).
	Ready func()
}

// Serve runs the gate until ctx is done: the startup steps in the order of
// C-FW-1, each failure returning before anything listens (fail closed), then
// the proxy, the config loop and the report loop. It returns nil after a
// clean shutdown. The firewall rules stay when it returns: a dead gate fails
// closed.
func Serve(ctx context.Context, s gatewire.Env, d Deps) (err error) {
	if err := secure(s, d.System); err != nil {
		return err
	}
	deny, err := d.System.DenyList(ctx, s.ControlPlaneHost())
	if err != nil {
		return fmt.Errorf("deny list: %w", err)
	}
	stopTracer, err := d.StartTelemetry(ctx)
	if err != nil {
		return fmt.Errorf("telemetry: %w", err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
		defer cancel()
		if serr := stopTracer(sctx); serr != nil {
			d.Log.Warn("telemetry flush failed", "err", serr)
		}
	}()
	tally := &gatewire.Tally{}
	p, err := d.NewProxy(ProxyOptions{Deny: deny, Logger: d.Log, SessionID: s.SessionID, Verdicts: tally, TunnelIdle: s.TunnelIdle})
	if err != nil {
		return fmt.Errorf("proxy: %w", err)
	}
	ln, err := d.System.Listen(s.Addr)
	if err != nil {
		return fmt.Errorf("listen on GATE_ADDR %s: %w", s.Addr, err)
	}
	return run(ctx, s, d, p, ln, tally)
}

// secure runs the privileged steps of C-FW-1: the firewall, the CA
// directory and the privilege drop. With GATE_FIREWALL=preinstalled an
// init step did the firewall; the gate then only checks that it holds no
// privilege and clears the CA file an earlier run of it left.
func secure(s gatewire.Env, sys ports.GateSystem) error {
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
func run(ctx context.Context, s gatewire.Env, d Deps, p ports.GateProxy, ln net.Listener, tally *gatewire.Tally) error {
	served := make(chan error, 1)
	go func() { served <- p.Serve(ln) }()
	l := &loop{
		fetch: d.Fetcher, proxy: p, caFile: s.CAFile, interval: s.FetchInterval,
		log: d.Log, ready: d.Ready, readyAttrs: []any{"addr", s.Addr.String(), "session", s.SessionID.String()},
	}
	rl := &reportLoop{tally: tally, send: d.Reporter, interval: min(s.FetchInterval, maxReportInterval), log: d.Log}
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
		d.Log.Info("gate stopping", "cause", context.Cause(ctx))
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
