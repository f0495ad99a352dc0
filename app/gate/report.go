package gate

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/sandgate/sandgate/core/gatewire"
	"github.com/sandgate/sandgate/ports"
)

// maxReportInterval caps the time between verdict reports. Reports follow
// the config fetch interval, but no slower than this: a reap revokes the
// token before it stops the gate, so whatever is counted after the last
// report is lost, and a short cadence keeps that loss small. An empty report
// is never sent, so an idle gate costs nothing.
const maxReportInterval = 5 * time.Second

// reportLoop sends the tally's counts every interval, and once more when
// the gate stops. A failed report is put back into the tally (it saturates,
// so memory stays bounded however long the control plane is away); a 401
// ends reporting, since the token will never be accepted again.
type reportLoop struct {
	tally    *gatewire.Tally
	send     ports.GateReporter
	interval time.Duration
	log      *slog.Logger
	revoked  bool
}

// run reports until ctx is done or the token is revoked.
func (l *reportLoop) run(ctx context.Context) {
	t := time.NewTicker(l.interval)
	defer t.Stop()
	for !l.revoked {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			l.flush(ctx)
		}
	}
}

// flush sends what was counted since the last report, if anything.
func (l *reportLoop) flush(ctx context.Context) {
	if l.revoked {
		return
	}
	r := l.tally.Take()
	if r.Empty() {
		return
	}
	o, err := l.send.Report(ctx, r)
	switch o {
	case ports.GateFetched:
		l.log.Debug("verdicts reported", "verdicts", summary(r))
	case ports.GateRevoked:
		l.revoked = true
		l.log.Warn("verdict reports stop: the gate token is revoked", "unreported", summary(r))
	default:
		l.tally.Restore(r)
		l.log.Warn("verdict report failed; the counts wait for the next one", "err", err)
	}
}

// summary renders a report for a log line: "denied/not-allowed=2 …".
func summary(r gatewire.Report) string {
	parts := make([]string, 0, len(r.Verdicts))
	for _, v := range r.Verdicts {
		parts = append(parts, fmt.Sprintf("%s/%s=%d", v.Verdict, v.Reason, v.Count))
	}
	return strings.Join(parts, " ")
}
