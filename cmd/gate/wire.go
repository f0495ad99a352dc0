package main

import (
	"context"
	"log/slog"
	"net"
	"net/netip"

	"go.opentelemetry.io/otel/trace"

	"github.com/sandgate/sandgate/adapters/firewall"
	"github.com/sandgate/sandgate/adapters/httpapi"
	"github.com/sandgate/sandgate/adapters/proxy"
	"github.com/sandgate/sandgate/adapters/telemetry"
	"github.com/sandgate/sandgate/app/gate"
	"github.com/sandgate/sandgate/core/gatewire"
	"github.com/sandgate/sandgate/ports"
)

// serviceName is the gate's service.name in its spans.
const serviceName = "sandgate-gate"

// realDeps wires the gate's real parts by hand (no fx: docs/STYLE.md) for the
// environment s.
func realDeps(s gatewire.Env, log *slog.Logger) gate.Deps {
	tr := &tracing{}
	return gate.Deps{
		System: osSystem{
			firewall: installFirewall,
			resolve: func(ctx context.Context, host string) ([]netip.Addr, error) {
				return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
			},
			interfaceAddrs: net.InterfaceAddrs,
		},
		StartTelemetry: tr.start,
		NewProxy:       tr.newProxy,
		Fetcher:        httpapi.NewGateConfigClient(s.ConfigURL(), s.Token),
		Reporter:       httpapi.NewGateReportClient(s.ReportURL(), s.Token),
		Log:            log,
	}
}

// tracing hands the tracer provider the telemetry step starts to the proxy
// built after it: gate.Serve orders the two steps, but names no
// OpenTelemetry type (the import rule keeps SDKs out of app).
type tracing struct {
	tp trace.TracerProvider // nil until start: the proxy's no-op default
}

func (t *tracing) start(ctx context.Context) (func(context.Context) error, error) {
	tp, flush, err := telemetry.NewTracerProvider(ctx, serviceName)
	if err != nil {
		return nil, err
	}
	t.tp = tp
	return flush, nil
}

func (t *tracing) newProxy(o gate.ProxyOptions) (ports.GateProxy, error) {
	return proxy.New(proxy.Options{Deny: o.Deny, Tracer: t.tp, Logger: o.Logger, SessionID: o.SessionID, Verdicts: o.Verdicts, TunnelIdleTimeout: o.TunnelIdle})
}

// installFirewall opens the IPv4 table and, when IPv6 is on, the IPv6 one,
// then installs and verifies the rules (an unusable ip6tables while IPv6 is
// on is an error: C-FW-2).
func installFirewall(uid uint32) error {
	v4, v6, err := firewall.Open()
	if err != nil {
		return err
	}
	return firewall.Install(firewall.Rules{GateUID: uid}, v4, v6)
}
