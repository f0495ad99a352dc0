package main

import (
	"context"
	"log/slog"
	"net"
	"net/netip"

	"go.opentelemetry.io/otel/trace"

	"github.com/sandgate/sandgate/adapters/firewall"
	"github.com/sandgate/sandgate/adapters/proxy"
	"github.com/sandgate/sandgate/adapters/telemetry"
)

// serviceName is the gate's service.name in its spans.
const serviceName = "sandgate-gate"

// realDeps wires the gate's real parts by hand (no fx: docs/STYLE.md).
func realDeps(log *slog.Logger) deps {
	return deps{
		sys: osSystem{
			firewall: installFirewall,
			resolve: func(ctx context.Context, host string) ([]netip.Addr, error) {
				return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
			},
			interfaceAddrs: net.InterfaceAddrs,
		},
		newTracer: func(ctx context.Context) (trace.TracerProvider, func(context.Context) error, error) {
			return telemetry.NewTracerProvider(ctx, serviceName)
		},
		newProxy: func(o proxyOptions) (egressProxy, error) {
			return proxy.New(proxy.Options{Deny: o.Deny, Tracer: o.Tracer, Logger: o.Logger, SessionID: o.SessionID, Verdicts: o.Verdicts, TunnelIdleTimeout: o.TunnelIdle})
		},
		log: log,
	}
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
