package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/sandgate/sandgate/adapters/docker"
	"github.com/sandgate/sandgate/core/agentwire"
	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/ports"
)

// benchLabel marks everything the bench creates, so close (and a later run,
// after a crash) removes it by label.
const benchLabel = "dev.sandgate.bench"

// box is one provider and one sandbox of it.
type box struct {
	p   *docker.Provider
	sid domain.ID
	sb  ports.Sandbox
}

// env is what every row shares: the raw client and the fallback's box (a
// provider without the agent: the engine-exec path the old rows measure).
// The agent's box is made on first use (agent), so that a run of the old
// rows pays nothing for it.
type env struct {
	cli *client.Client
	box
	image      string
	agentImage string
	quick      bool

	agentOnce sync.Once
	agentBox  *box
	agentErr  error
	// gvisorBox is the gVisor rows' box (gvisor), made on first use.
	gvisorOnce sync.Once
	gvisorBox  *box
	gvisorErr  error
	// agentPeak is the highest VmHWM of the agents of
	// agent-exec-parallel-32, for agent-rss.
	agentPeak int64
}

func newEnv(ctx context.Context, image, agentImage string, quick bool) (*env, error) {
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, err
	}
	e := &env{cli: cli, image: image, agentImage: agentImage, quick: quick}
	e.removeLeftovers(ctx)
	b, err := e.newBox(ctx, "")
	if err != nil {
		return nil, err
	}
	e.box = *b
	return e, nil
}

// newBox makes a provider (with the agent of agentImage, or none) and
// provisions one sandbox of it.
func (e *env) newBox(ctx context.Context, agentImage string) (*box, error) {
	b := &box{sid: domain.NewID("ses"),
		p: docker.New(e.cli, docker.Options{Labels: map[string]string{benchLabel: "1"}, AgentImage: agentImage, AgentKey: agentKey})}
	sb, err := b.p.Provision(ctx, sandbox.Spec{SessionID: b.sid, Image: e.image})
	if err != nil {
		return nil, fmt.Errorf("provision the bench sandbox: %w", err)
	}
	b.sb = sb
	return b, nil
}

// agent is the agent's box, made on first use. A sandbox that came up
// without the agent (its image missing: the provider falls back quietly)
// is an error, since the agent rows would measure the fallback.
func (e *env) agent(ctx context.Context) (*box, error) {
	e.agentOnce.Do(func() {
		b, err := e.newBox(ctx, e.agentImage)
		if err == nil {
			err = e.requireAgent(ctx, b.sb.ID())
		}
		e.agentBox, e.agentErr = b, err
	})
	return e.agentBox, e.agentErr
}

// requireAgent fails unless container id mounts the agent.
func (e *env) requireAgent(ctx context.Context, id string) error {
	c, err := e.cli.ContainerInspect(ctx, id)
	if err != nil {
		return err
	}
	for _, m := range c.Mounts {
		if m.Destination == agentwire.Dir {
			return nil
		}
	}
	return fmt.Errorf("the agent's sandbox has no agent (is %s in the engine?)", e.agentImage)
}

// close stops the agents (their streams end) and removes what the bench
// made.
func (e *env) close() {
	if e.agentBox != nil {
		_ = e.agentBox.p.Close()
	}
	if e.gvisorBox != nil {
		_ = e.gvisorBox.p.Close()
	}
	e.removeLeftovers(context.Background())
}

// removeLeftovers removes every container carrying the bench label.
func (e *env) removeLeftovers(ctx context.Context) {
	list, _ := e.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", benchLabel))})
	for _, c := range list {
		_ = e.cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true})
	}
}

// iterations picks a count for full and quick runs.
func (e *env) iterations(full, quick int) int {
	if e.quick {
		return quick
	}
	return full
}

// rawExec is the baseline exec: create, attach, drain, inspect — the calls
// the adapter makes, with nothing of ours around them.
func (e *env) rawExec(ctx context.Context, id string, argv ...string) error {
	return e.rawRun(ctx, id, io.Discard, argv...)
}

// rawRun is rawExec with the command's stdout kept in out.
func (e *env) rawRun(ctx context.Context, id string, out io.Writer, argv ...string) error {
	ex, err := e.cli.ContainerExecCreate(ctx, id, container.ExecOptions{Cmd: argv, AttachStdout: true, AttachStderr: true})
	if err != nil {
		return err
	}
	h, err := e.cli.ContainerExecAttach(ctx, ex.ID, container.ExecAttachOptions{})
	if err != nil {
		return err
	}
	_, err = stdcopy.StdCopy(out, io.Discard, h.Reader)
	h.Close()
	if err != nil {
		return err
	}
	ins, err := e.cli.ContainerExecInspect(ctx, ex.ID)
	if err == nil && ins.ExitCode != 0 {
		err = fmt.Errorf("raw exec %v: exit %d", argv, ins.ExitCode)
	}
	return err
}

// archiveGet is the baseline read: one archive GET of path, drained.
func (e *env) archiveGet(ctx context.Context, id, path string) error {
	rc, _, err := e.cli.CopyFromContainer(ctx, id, path)
	if err != nil {
		return err
	}
	defer func() { _ = rc.Close() }()
	_, err = io.Copy(io.Discard, rc)
	return err
}

// interleave runs ours and base alternately n times each and returns both
// medians: the machine's noise hits both sides alike.
func interleave(n int, ours, base func(i int) error) (time.Duration, time.Duration, error) {
	untimed := func(f func(int) error) func(int) (func(), error) {
		return func(i int) (func(), error) { return func() {}, f(i) }
	}
	return interleaveUndo(n, untimed(ours), untimed(base))
}

// interleaveUndo is interleave for operations that leave something to undo
// (a container to remove): each side returns its undo, which runs after the
// clock stops, so neither side is charged for its teardown. The side that
// goes first alternates, so that neither always runs right after the
// other's teardown or on a cache the other warmed.
func interleaveUndo(n int, ours, base func(i int) (undo func(), err error)) (time.Duration, time.Duration, error) {
	var a, b []time.Duration
	for i := range n {
		sides := []struct {
			f   func(int) (func(), error)
			out *[]time.Duration
		}{{ours, &a}, {base, &b}}
		if i%2 == 1 {
			sides[0], sides[1] = sides[1], sides[0]
		}
		for _, side := range sides {
			t0 := time.Now()
			undo, err := side.f(i)
			took := time.Since(t0)
			if undo != nil {
				undo()
			}
			if err != nil {
				return 0, 0, err
			}
			*side.out = append(*side.out, took)
		}
	}
	return median(a), median(b), nil
}

func median(d []time.Duration) time.Duration {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	if len(d)%2 == 1 {
		return d[len(d)/2]
	}
	return (d[len(d)/2-1] + d[len(d)/2]) / 2
}

// rssGrowth runs f and reports how far the process's peak RSS rose above
// its RSS before f, in bytes (Linux: clear_refs resets the peak).
func rssGrowth(f func() error) (int64, error) {
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
	before := procStatus("VmRSS")
	err := f()
	return procStatus("VmHWM") - before, err
}

// procStatus reads one kB field of /proc/self/status, in bytes.
func procStatus(field string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			n, _ := parseKB(v)
			return n
		}
	}
	return 0
}

// parseKB parses a /proc status value ("  1234 kB") into bytes.
func parseKB(v string) (int64, error) {
	kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
	return kb << 10, err
}

// agentKey makes every agent stream a relay to its sandbox's daemon, as
// the executor runs it.
func agentKey() []byte { return []byte("sandgate bench agent key") }
