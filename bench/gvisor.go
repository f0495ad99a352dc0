package main

import (
	"context"

	"github.com/sandgate/sandgate/adapters/docker"
	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
)

// gvisorRows are docs/PERFORMANCE.md's gVisor rows (issue 16): each is the
// same operation under gVisor against the same operation under runc, both
// through the agent, interleaved in one run. The ratio is gVisor's cost;
// no target, a measurement.
var gvisorRows = []rowSpec{
	{"gvisor-exec-true", "report", gvisorPair(func(ctx context.Context, e *env, b *box) (func(int) error, error) {
		return func(int) error { return execOK(ctx, b.sb, 0) }, nil
	})},
	{"gvisor-bulk-10k", "report", gvisorPair(func(ctx context.Context, e *env, b *box) (func(int) error, error) {
		files, _ := bulkInputs(1, e.bulkCount())
		return func(int) error { return b.sb.WriteFiles(ctx, files[0]) }, nil
	})},
	{"gvisor-provision-cold", "report", gvisorProvisionCold},
}

// gvisorRuntime is the engine's name for runsc (build/ensure-gvisor.sh).
const gvisorRuntime = "runsc"

// gvisor is a box whose sandbox runs under runsc, with the agent, made on
// first use.
func (e *env) gvisor(ctx context.Context) (*box, error) {
	e.gvisorOnce.Do(func() {
		b := &box{sid: domain.NewID("ses"), p: docker.New(e.cli, docker.Options{Labels: map[string]string{benchLabel: "1"},
			AgentImage: e.agentImage, AgentKey: agentKey, GVisorRuntime: gvisorRuntime})}
		b.sb, e.gvisorErr = b.p.Provision(ctx, sandbox.Spec{SessionID: b.sid, Image: e.image, Isolation: sandbox.IsolationGVisor})
		if e.gvisorErr == nil {
			e.gvisorErr = e.requireAgent(ctx, b.sb.ID())
		}
		e.gvisorBox = b
	})
	return e.gvisorBox, e.gvisorErr
}

// gvisorPair times op on the gVisor box against op on the agent's (runc)
// box.
func gvisorPair(op func(context.Context, *env, *box) (func(int) error, error)) func(context.Context, *env) (Row, error) {
	return func(ctx context.Context, e *env) (Row, error) {
		gb, err := e.gvisor(ctx)
		if err != nil {
			return Row{}, err
		}
		rb, err := e.agent(ctx)
		if err != nil {
			return Row{}, err
		}
		ours, err := op(ctx, e, gb)
		if err != nil {
			return Row{}, err
		}
		base, err := op(ctx, e, rb)
		if err != nil {
			return Row{}, err
		}
		row, err := latencyRow(e.iterations(20, 3), ours, base)
		row.Note = "ours: under gVisor; baseline: the same call under runc"
		return row, err
	}
}

// gvisorProvisionCold: Provision and a first Exec of a gVisor sandbox
// against the same under runc.
func gvisorProvisionCold(ctx context.Context, e *env) (Row, error) {
	rb, err := e.agent(ctx)
	if err != nil {
		return Row{}, err
	}
	gb, err := e.gvisor(ctx)
	if err != nil {
		return Row{}, err
	}
	gp := gb.p
	cold := func(p *docker.Provider, iso sandbox.Isolation) func(int) (func(), error) {
		return func(int) (func(), error) {
			sid := domain.NewID("ses")
			undo := func() { _ = p.Reap(context.WithoutCancel(ctx), sid) }
			sb, err := p.Provision(ctx, sandbox.Spec{SessionID: sid, Image: e.image, Isolation: iso})
			if err != nil {
				return undo, err
			}
			return undo, execOK(ctx, sb, 0)
		}
	}
	ours, base, err := interleaveUndo(e.iterations(5, 2), cold(gp, sandbox.IsolationGVisor), cold(rb.p, sandbox.IsolationRunc))
	if err != nil {
		return Row{}, err
	}
	row := latencyResult(ours, base)
	row.Note = "Provision + first Exec; ours under gVisor, baseline under runc"
	return row, nil
}
