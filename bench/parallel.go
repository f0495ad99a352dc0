package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/ports"
)

// parallelRounds and parallelPer split each side's 32 × 50 execs into
// rounds of 32 × 10 that alternate between the sides (the first side
// alternating too), and the row compares the median round's ops/s: the
// machine's load drifts over minutes, and one long round per side measured
// the drift as much as the difference. The same 1,600 execs a side as one
// round, so the bench still fits its 10 minutes.
const parallelRounds, parallelPer = 5, 10

// parallelPlan sizes a parallel row: sessions sandboxes, each running
// oursPer execs of ours (basePer raw execs) one after another in a round,
// all sandboxes at once. The sides may run different counts (the agent's
// execs are far cheaper than the raw engine's, and the raw side at the
// agent's count would not fit the run's budget): the ratio is of ops/s.
type parallelPlan struct{ sessions, rounds, oursPer, basePer int }

// parallelRow: ops/s of Exec("true") on plan.sessions sandboxes of b's
// provider at once, against raw engine execs at the same concurrency on
// the same sandboxes. after, when set, runs on the sandboxes once the
// rounds are done, before they are reaped.
func parallelRow(ctx context.Context, e *env, b *box, plan parallelPlan, after func([]ports.Sandbox) error) (Row, error) {
	sbs := make([]ports.Sandbox, plan.sessions)
	for i := range sbs {
		sid := domain.NewID("ses")
		defer func() { _ = b.p.Reap(context.WithoutCancel(ctx), sid) }()
		sb, err := b.p.Provision(ctx, sandbox.Spec{SessionID: sid, Image: e.image})
		if err != nil {
			return Row{}, err
		}
		sbs[i] = sb
	}
	ours, base, err := interleave(plan.rounds,
		func(int) error {
			return fanout(sbs, plan.oursPer, func(sb ports.Sandbox) error { return execOK(ctx, sb, 0) })
		},
		func(int) error {
			return fanout(sbs, plan.basePer, func(sb ports.Sandbox) error { return e.rawExec(ctx, sb.ID(), "true") })
		})
	if err != nil {
		return Row{}, err
	}
	ops := func(per int, d time.Duration) float64 { return float64(plan.sessions*per) / d.Seconds() }
	oursOps, baseOps := ops(plan.oursPer, ours), ops(plan.basePer, base)
	row := Row{Ours: ours.Round(time.Millisecond).String(), Baseline: base.Round(time.Millisecond).String(),
		Ratio: oursOps / baseOps,
		Note: fmt.Sprintf("%d sessions x %d execs ours (x %d raw) x %d rounds a side, median round %.1f ops/s ours, %.1f baseline, zero errors",
			plan.sessions, plan.oursPer, plan.basePer, plan.rounds, oursOps, baseOps)}
	if after != nil {
		err = after(sbs)
	}
	return row, err
}

// fanout runs op per times on every sandbox, the sandboxes at once, and
// fails if any op failed.
func fanout(sbs []ports.Sandbox, per int, op func(sb ports.Sandbox) error) error {
	var wg sync.WaitGroup
	errs := make(chan error, len(sbs)*per)
	for _, sb := range sbs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range per {
				if err := op(sb); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if n := len(errs); n > 0 {
		return fmt.Errorf("%d of %d execs failed, first: %w", n, len(sbs)*per, <-errs)
	}
	return nil
}
