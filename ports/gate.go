package ports

import (
	"context"

	"github.com/sandgate/sandgate/core/gatewire"
)

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
