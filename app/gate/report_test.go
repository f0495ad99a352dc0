package gate

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/gatewire"
	"github.com/sandgate/sandgate/ports"
)

// fakeReporter answers with the scripted outcomes in turn (GateFetched once the
// script is used up) and records what it was sent.
type fakeReporter struct {
	mu     sync.Mutex
	script []ports.GateOutcome
	sent   []gatewire.Report
}

func (f *fakeReporter) Report(_ context.Context, r gatewire.Report) (ports.GateOutcome, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = append(f.sent, r)
	if len(f.script) == 0 {
		return ports.GateFetched, nil
	}
	o := f.script[0]
	f.script = f.script[1:]
	if o != ports.GateFetched {
		return o, errInjected
	}
	return o, nil
}

func (f *fakeReporter) reports() []gatewire.Report {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]gatewire.Report(nil), f.sent...)
}

func denied(n int64) gatewire.Report {
	return gatewire.Report{Verdicts: []gatewire.VerdictCount{
		{Verdict: gatewire.VerdictDenied, Reason: gatewire.ReasonNotAllowed, Count: n}}}
}

func TestReportLoopFlush(t *testing.T) {
	t.Parallel()
	log, _ := testLogger(t)
	f := &fakeReporter{script: []ports.GateOutcome{ports.GateFailed, ports.GateFetched, ports.GateRevoked}}
	l := &reportLoop{tally: &gatewire.Tally{}, send: f, interval: time.Hour, log: log}
	ctx := context.Background()

	l.flush(ctx)
	require.Empty(t, f.reports(), "an empty tally sends nothing")

	l.tally.Add(false, gatewire.ReasonNotAllowed)
	l.flush(ctx) // fails: the count is kept
	l.tally.Add(false, gatewire.ReasonNotAllowed)
	l.flush(ctx) // carries both
	require.Equal(t, []gatewire.Report{denied(1), denied(2)}, f.reports())
	require.True(t, l.tally.Take().Empty())

	l.tally.Add(false, gatewire.ReasonNotAllowed)
	l.flush(ctx) // 401: reporting stops for good
	require.True(t, l.revoked)
	l.tally.Add(false, gatewire.ReasonNotAllowed)
	l.flush(ctx)
	require.Len(t, f.reports(), 3)

	done := make(chan struct{})
	go func() { l.run(ctx); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		require.FailNow(t, "run kept going after a revoked token")
	}
}

func TestReportLoopRunsEveryInterval(t *testing.T) {
	t.Parallel()
	log, _ := testLogger(t)
	f := &fakeReporter{}
	l := &reportLoop{tally: &gatewire.Tally{}, send: f, interval: 10 * time.Millisecond, log: log}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { l.run(ctx); close(done) }()
	l.tally.Add(false, gatewire.ReasonNotAllowed)
	require.Eventually(t, func() bool { return len(f.reports()) == 1 }, 5*time.Second, 5*time.Millisecond)
	cancel()
	<-done
	require.Equal(t, denied(1), f.reports()[0])
}

// TestShutdownReports: what the proxy counted before the gate stops is
// reported on the way out, after the proxy's shutdown.
func TestShutdownReports(t *testing.T) {
	t.Parallel()
	f := &fakeReporter{}
	g := startGate(t, "", func(_ *gateRun, d *Deps) { d.Reporter = f })
	select {
	case <-g.ready:
	case <-time.After(10 * time.Second):
		require.FailNow(t, "never ready")
	}
	require.NotNil(t, g.proxy.opts.Verdicts, "the proxy counts into the gate's tally")
	g.proxy.opts.Verdicts.Add(false, gatewire.ReasonNotAllowed)
	g.stop()
	require.NoError(t, g.wait(t))
	require.Equal(t, []gatewire.Report{denied(1)}, f.reports())
}
