package main

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/sandgate/sandgate/ports"
)

// agentRows are docs/PERFORMANCE.md's "The agent" rows on Docker: the same
// operations as the old rows, on a provider with the in-sandbox agent
// (env.agent), each against the cheapest raw engine call with the same
// result, interleaved in the same run.
var agentRows = []rowSpec{
	{"agent-exec-true", "<=0.10", agentExecTrueRow},
	{"agent-exec-parallel-32", ">=10", onAgent(agentParallel)},
	{"agent-write-small", "<=0.15", onAgent(writeSmallRow)},
	{"agent-read-small", "<=0.15", onAgent(readSmallRow)},
	{"agent-bulk-10k", "<=1.00", onAgent(bulkCompare)},
	{"agent-stream-write-512m", ">=0.90", onAgent(streamWriteRow)},
	{"agent-stream-read-512m", ">=0.90", onAgent(streamReadRow)},
	{"agent-provision-cold", "<=1.10", onAgent(provisionColdRow)},
	{"agent-rss", "rss<=16MiB idle,<=32MiB peak", agentRSSRow},
}

// onAgent runs f on the agent's box, made on first use.
func onAgent(f boxRow) func(context.Context, *env) (Row, error) {
	return func(ctx context.Context, e *env) (Row, error) {
		b, err := e.agent(ctx)
		if err != nil {
			return Row{}, err
		}
		return f(ctx, e, b)
	}
}

// agentExecTrueRow: Exec("true") over the agent against a raw engine exec
// of true, and against the in-sandbox floor (fork+exec of /bin/true timed
// by the sandbox's own clock), which must be within 3×. The note adds the
// floor of `/bin/bash -c true`, which is what the agent spawns: the rest
// of our time is the agent and its stream.
func agentExecTrueRow(ctx context.Context, e *env) (Row, error) {
	b, err := e.agent(ctx)
	if err != nil {
		return Row{}, err
	}
	// The floors before and after the timed rows: the load drifts.
	before, err := e.floors(ctx, b.sb.ID())
	if err != nil {
		return Row{}, err
	}
	row, err := latencyRow(e.iterations(30, 5), func(int) error { return execOK(ctx, b.sb, 0) },
		func(int) error { return e.rawExec(ctx, b.sb.ID(), "true") })
	if err != nil {
		return row, err
	}
	after, err := e.floors(ctx, b.sb.ID())
	if err != nil {
		return row, err
	}
	floor, bash := (before[0]+after[0])/2, (before[1]+after[1])/2
	ours, _ := time.ParseDuration(row.Ours)
	x := float64(ours) / float64(floor)
	us := func(d time.Duration) time.Duration { return d.Round(time.Microsecond) }
	row.Note = fmt.Sprintf("in-sandbox floor %s (fork+exec of /bin/true: %s before, %s after); ours %.1fx floor (target <=3); "+
		"bash -c true in-sandbox %s", us(floor), us(before[0]), us(after[0]), x, us(bash))
	row.extraMiss = x > 3
	return row, nil
}

// floors are the in-sandbox costs of `/bin/true` and `/bin/bash -c true`.
func (e *env) floors(ctx context.Context, id string) ([2]time.Duration, error) {
	var f [2]time.Duration
	var err error
	for i, cmd := range []string{"/bin/true", "/bin/bash -c true"} {
		if f[i], err = e.inSandbox(ctx, id, cmd); err != nil {
			return f, err
		}
	}
	return f, nil
}

// inSandbox runs cmd n times in a bash loop inside sandbox id (an engine
// exec: the agent plays no part) and divides the time the sandbox's own
// clock saw by n. The two `date` runs are outside the loop.
func (e *env) inSandbox(ctx context.Context, id, cmd string) (time.Duration, error) {
	n := e.iterations(200, 20)
	script := fmt.Sprintf(`s=$(date +%%s%%N); for ((i = 0; i < %d; i++)); do %s; done; echo "$s $(date +%%s%%N)"`, n, cmd)
	var out bytes.Buffer
	if err := e.rawRun(ctx, id, &out, "bash", "-c", script); err != nil {
		return 0, err
	}
	var start, end int64
	if _, err := fmt.Sscan(out.String(), &start, &end); err != nil || end <= start {
		return 0, fmt.Errorf("in-sandbox %s: unexpected output %q", cmd, out.String())
	}
	return time.Duration((end - start) / int64(n)), nil
}

// readSmallRow: ReadFile of 1 KiB against the engine's cheapest way to get
// a file's bytes, one archive GET of it, drained.
func readSmallRow(ctx context.Context, e *env, b *box) (Row, error) {
	const path = "/workspace/read-small"
	if err := b.sb.WriteFile(ctx, path, bytes.Repeat([]byte("r"), 1024)); err != nil {
		return Row{}, err
	}
	return latencyRow(e.iterations(30, 5), func(int) error {
		data, err := b.sb.ReadFile(ctx, path)
		if err == nil && len(data) != 1024 {
			err = fmt.Errorf("read %d bytes of 1024", len(data))
		}
		return err
	}, func(int) error {
		return e.archiveGet(ctx, b.sb.ID(), path)
	})
}

// agentParallel: 32 sessions × 200 Execs over the agent (4 rounds of 50 a
// session) against raw engine execs at the same concurrency (4 rounds of 5
// a session: at the engine's ~10 execs/s here, 200 a session would take
// ten minutes). It records the agents' peak RSS for agent-rss.
func agentParallel(ctx context.Context, e *env, b *box) (Row, error) {
	plan := parallelPlan{sessions: 32, rounds: 4, oursPer: 50, basePer: 5}
	if e.quick {
		plan = parallelPlan{sessions: 4, rounds: 2, oursPer: 20, basePer: 5}
	}
	return parallelRow(ctx, e, b, plan, func(sbs []ports.Sandbox) error {
		for _, sb := range sbs {
			rss, err := e.agentRSS(ctx, sb.ID())
			if err != nil {
				return err
			}
			e.agentPeak = max(e.agentPeak, rss.hwm)
		}
		return nil
	})
}

// agentRSSRow: the agent's RSS in a fresh sandbox after one exec (idle),
// and the highest peak (VmHWM) of the 32 agents of agent-exec-parallel-32,
// run here if it did not run before in this run.
func agentRSSRow(ctx context.Context, e *env) (Row, error) {
	b, err := e.agent(ctx)
	if err != nil {
		return Row{}, err
	}
	if e.agentPeak == 0 {
		if _, err := agentParallel(ctx, e, b); err != nil {
			return Row{}, err
		}
	}
	fresh, err := e.newBox(ctx, e.agentImage)
	if err != nil {
		return Row{}, err
	}
	defer func() { _ = fresh.p.Reap(context.WithoutCancel(ctx), fresh.sid) }()
	defer func() { _ = fresh.p.Close() }()
	if err := execOK(ctx, fresh.sb, 0); err != nil {
		return Row{}, err
	}
	idle, err := e.agentRSS(ctx, fresh.sb.ID())
	if err != nil {
		return Row{}, err
	}
	// The rows' own agent has carried every agent row run before this
	// one: its peak says what the 512 MiB streams cost it. The exec starts
	// it if none did.
	if err := execOK(ctx, b.sb, 0); err != nil {
		return Row{}, err
	}
	worked, err := e.agentRSS(ctx, b.sb.ID())
	if err != nil {
		return Row{}, err
	}
	return Row{Ours: mib(idle.rss), Baseline: mib(e.agentPeak),
		Note: fmt.Sprintf("idle VmRSS %s (target <=16MiB), peak VmHWM of the parallel agents %s (target <=32MiB); "+
			"the agent rows' own agent: VmRSS %s, VmHWM %s", mib(idle.rss), mib(e.agentPeak), mib(worked.rss), mib(worked.hwm)),
		extraMiss: idle.rss > 16<<20 || e.agentPeak > 32<<20}, nil
}

func mib(n int64) string { return fmt.Sprintf("%.1fMiB", float64(n)/(1<<20)) }
