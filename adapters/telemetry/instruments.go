package telemetry

import (
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
)

// Every sandgate.* instrument is declared in this package: the provider
// decorator's three in provider.go, the rest here, created by the program
// that records them (cmd/executor) and handed to whoever adds to them.
// Each keeps the instrumentation scope it was first published under: the
// scope is part of a series' labels (otel_scope_name), which dashboards
// select on.
const (
	// VerdictsMetric counts the egress requests the sessions' gates
	// allowed or denied, with the attributes verdict (allowed|denied) and
	// reason (gatewire.Reasons; "other" for any other value). Prometheus
	// shows it as sandgate_gate_verdicts_total.
	VerdictsMetric = "sandgate.gate.verdicts"
	// RequestsMetric counts the executor API's requests by route (the mux
	// pattern, never the raw path) and status.
	RequestsMetric = "sandgate.api.requests"
	// ReapsMetric counts reaped sandboxes by reason (idle, orphan,
	// explicit) and outcome.
	ReapsMetric = "sandgate.reaps"
	// DataPlaneMetric counts Exec and file operations by the data plane
	// that carried them: path=agent (the in-sandbox agent) or
	// path=fallback (engine execs: agent disabled, its image missing, or a
	// sandbox made without it).
	DataPlaneMetric = "sandgate.sandbox.operations"
)

// GateVerdicts is the VerdictsMetric counter of mp (a nil mp counts
// nothing).
func GateVerdicts(mp metric.MeterProvider) (metric.Int64Counter, error) {
	return counter(mp, "github.com/sandgate/sandgate/adapters/httpapi", VerdictsMetric,
		"Egress requests the sessions' gates allowed or denied, by reason.", "{request}")
}

// APIRequests is the RequestsMetric counter of mp.
func APIRequests(mp metric.MeterProvider) (metric.Int64Counter, error) {
	return counter(mp, "github.com/sandgate/sandgate/cmd/executor", RequestsMetric,
		"Requests to the executor's HTTP API by route and status.", "{request}")
}

// Reaps is the ReapsMetric counter of mp.
func Reaps(mp metric.MeterProvider) (metric.Int64Counter, error) {
	return counter(mp, "github.com/sandgate/sandgate/app", ReapsMetric,
		"Sandboxes reaped, by reason (idle, orphan, explicit) and outcome", "{reap}")
}

// DataPlane is the DataPlaneMetric counter of mp.
func DataPlane(mp metric.MeterProvider) (metric.Int64Counter, error) {
	return counter(mp, "github.com/sandgate/sandgate/cmd/executor", DataPlaneMetric,
		"Exec and file operations by data plane (agent or fallback).", "{operation}")
}

func counter(mp metric.MeterProvider, scope, name, desc, unit string) (metric.Int64Counter, error) {
	if mp == nil {
		mp = noop.NewMeterProvider()
	}
	return mp.Meter(scope).Int64Counter(name, metric.WithDescription(desc), metric.WithUnit(unit))
}
