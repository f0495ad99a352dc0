package main

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/docker/docker/api/types/container"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/ports"
)

type rowSpec struct {
	name, target string
	run          func(context.Context, *env) (Row, error)
}

var dockerRows = []rowSpec{
	{"exec-true", "<=1.10", func(ctx context.Context, e *env) (Row, error) {
		return latencyRow(e.iterations(30, 5), func(int) error { return execOK(ctx, e.sb, 0) },
			func(int) error { return e.rawExec(ctx, e.sb.ID(), "true") })
	}},
	{"exec-true-timed", "<=1.30", func(ctx context.Context, e *env) (Row, error) {
		return latencyRow(e.iterations(30, 5), func(int) error { return execOK(ctx, e.sb, time.Minute) },
			func(int) error { return e.rawExec(ctx, e.sb.ID(), "true") })
	}},
	{"write-small", "<=1.30", onFallback(writeSmallRow)},
	{"bulk-10k", "<=1.50", bulkRow},
	{"stream-write-512m", ">=0.80", onFallback(streamWriteRow)},
	{"stream-read-512m", ">=0.80", onFallback(streamReadRow)},
	{"export-10k", ">=0.90", exportRow},
	{"provision-adopt", "<=2.0", func(ctx context.Context, e *env) (Row, error) {
		spec := sandbox.Spec{SessionID: e.sid, Image: e.image}
		return latencyRow(e.iterations(30, 5), func(int) error {
			_, err := e.p.Provision(ctx, spec)
			return err
		}, func(int) error {
			_, err := e.cli.ContainerInspect(ctx, e.sb.ID())
			return err
		})
	}},
	{"provision-cold", "<=1.20", onFallback(provisionColdRow)},
	{"exec-parallel-32", ">=0.85", func(ctx context.Context, e *env) (Row, error) {
		plan := parallelPlan{sessions: 32, rounds: parallelRounds, oursPer: parallelPer, basePer: parallelPer}
		if e.quick {
			plan = parallelPlan{sessions: 4, rounds: 2, oursPer: 5, basePer: 5}
		}
		return parallelRow(ctx, e, &e.box, plan, nil)
	}},
	{"api-exec", "added<=2ms", apiExecRow},
}

// boxRow is a row that runs on a given box: the same measurement serves
// the fallback's row and the agent's.
type boxRow func(context.Context, *env, *box) (Row, error)

// onFallback runs f on the fallback's box (a provider without the agent).
func onFallback(f boxRow) func(context.Context, *env) (Row, error) {
	return func(ctx context.Context, e *env) (Row, error) { return f(ctx, e, &e.box) }
}

// latencyRow: ratio = median ours / median baseline (lower is better).
func latencyRow(n int, ours, base func(int) error) (Row, error) {
	a, b, err := interleave(n, ours, base)
	if err != nil {
		return Row{}, err
	}
	return latencyResult(a, b), nil
}

func latencyResult(a, b time.Duration) Row {
	return Row{Ours: a.Round(10 * time.Microsecond).String(), Baseline: b.Round(10 * time.Microsecond).String(),
		Ratio: float64(a) / float64(b)}
}

// throughputRow: ratio = baseline time / our time, i.e. our throughput as a
// fraction of the baseline's (higher is better).
func throughputRow(n int, ours, base func(int) error) (Row, error) {
	a, b, err := interleave(n, ours, base)
	if err != nil {
		return Row{}, err
	}
	return Row{Ours: a.Round(time.Millisecond).String(), Baseline: b.Round(time.Millisecond).String(),
		Ratio: float64(b) / float64(a)}, nil
}

func execOK(ctx context.Context, sb ports.Sandbox, timeout time.Duration) error {
	res, err := sb.Exec(ctx, sandbox.ExecRequest{Command: "true", Timeout: timeout})
	if err == nil && (res.ExitCode != 0 || res.TimedOut) {
		err = fmt.Errorf("exec true: %+v", res)
	}
	return err
}

// writeSmallRow: WriteFile of 1 KiB to a new path against the engine's
// cheapest way to put one file there, an archive PUT of a one-file tar (the
// floor; a raw exec round trip costs more). Both write into the same
// existing directory; the archives are built before the clock starts.
func writeSmallRow(ctx context.Context, e *env, b *box) (Row, error) {
	n := e.iterations(30, 5)
	data := bytes.Repeat([]byte("k"), 1024)
	archives := make([][]byte, n)
	for i := range archives {
		archives[i] = tarOf([]sandbox.FileWrite{{Path: fmt.Sprintf("/small-raw-%d", i), Data: data}})
	}
	return latencyRow(n, func(i int) error {
		return b.sb.WriteFile(ctx, fmt.Sprintf("/workspace/small-ours-%d", i), data)
	}, func(i int) error {
		return e.cli.CopyToContainer(ctx, b.sb.ID(), "/workspace", bytes.NewReader(archives[i]), container.CopyToContainerOptions{})
	})
}

// tree is the bulk payload: count files of 5 B to 4 KiB over 100
// directories, deterministic, listed directory by directory as a tree walk
// (how a skill's files are enumerated) rather than interleaved.
func tree(root string, count int) []sandbox.FileWrite {
	r := rand.New(rand.NewPCG(1, 2))
	files := make([]sandbox.FileWrite, count)
	for i := range files {
		data := make([]byte, 5+r.IntN(4096-5+1))
		for j := range data {
			data[j] = byte('a' + r.IntN(26))
		}
		files[i] = sandbox.FileWrite{Path: fmt.Sprintf("%s/d%02d/f%05d.txt", root, i*100/count, i), Data: data}
	}
	return files
}

// tarOf is the baseline's archive of the same files, for a PUT at "/" (or
// at the directory the paths are relative to). It has no directory
// entries: the engine makes missing parents itself, as our bulk write does.
func tarOf(files []sandbox.FileWrite) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		_ = tw.WriteHeader(&tar.Header{Name: f.Path[1:], Mode: 0o644, Size: int64(len(f.Data)), Typeflag: tar.TypeReg})
		_, _ = tw.Write(f.Data)
	}
	_ = tw.Close()
	return buf.Bytes()
}

// bulkInputs prepares the bulk rows' inputs for n rounds before any clock
// starts, the same for both sides: ours the files under /workspace/bulk<i>,
// the baseline the archive of the same files under /workspace/raw<i>.
// Neither side's directories exist beforehand: each side makes its own
// tree, which is the work being compared.
func bulkInputs(n, count int) (ours [][]sandbox.FileWrite, raw [][]byte) {
	files := tree("", count)
	rebase := func(root string) []sandbox.FileWrite {
		out := make([]sandbox.FileWrite, len(files))
		for i, f := range files {
			out[i] = sandbox.FileWrite{Path: root + f.Path, Data: f.Data}
		}
		return out
	}
	for i := range n {
		ours = append(ours, rebase(fmt.Sprintf("/workspace/bulk%d", i)))
		raw = append(raw, tarOf(rebase(fmt.Sprintf("/workspace/raw%d", i))))
	}
	return ours, raw
}

func (e *env) bulkCount() int {
	if e.quick {
		return 500
	}
	return 10000
}

// bulkCompare: WriteFiles of the tree against one archive PUT of it.
func bulkCompare(ctx context.Context, e *env, b *box) (Row, error) {
	count, n := e.bulkCount(), e.iterations(3, 1)
	ours, raw := bulkInputs(n, count)
	row, err := latencyRow(n, func(i int) error {
		return b.sb.WriteFiles(ctx, ours[i])
	}, func(i int) error {
		return e.cli.CopyToContainer(ctx, b.sb.ID(), "/", bytes.NewReader(raw[i]), container.CopyToContainerOptions{})
	})
	row.Note = fmt.Sprintf("%d files", count)
	return row, err
}

// bulkRow is bulkCompare on the fallback, which must also beat one
// WriteFile per file a hundredfold.
func bulkRow(ctx context.Context, e *env) (Row, error) {
	count := e.bulkCount()
	row, err := bulkCompare(ctx, e, &e.box)
	if err != nil {
		return row, err
	}
	// ≥ 100× faster than one WriteFile per file, extrapolated from 100.
	singles := tree("/workspace/single", 100)
	t0 := time.Now()
	for _, f := range singles {
		if err := e.sb.WriteFile(ctx, f.Path, f.Data); err != nil {
			return row, err
		}
	}
	perFile := time.Since(t0) / 100
	oursMedian, _ := time.ParseDuration(row.Ours)
	speedup := float64(perFile) * float64(count) / float64(oursMedian)
	row.Note = fmt.Sprintf("%d files; %.0fx faster than %d WriteFiles (target >=100x)", count, speedup, count)
	row.extraMiss = speedup < 100
	return row, nil
}

// payload streams size deterministic bytes without holding them.
func payload(size int64) io.Reader {
	return io.LimitReader(rand.NewChaCha8([32]byte{3}), size)
}

func (e *env) streamSize() int64 {
	if e.quick {
		return 32 << 20
	}
	return 512 << 20
}

func streamWriteRow(ctx context.Context, e *env, b *box) (Row, error) {
	size := e.streamSize()
	var growth int64
	row, err := throughputRow(e.iterations(3, 1), func(i int) error {
		g, err := rssGrowth(func() error {
			return b.sb.WriteFileStream(ctx, "/workspace/stream-ours", payload(size), size)
		})
		growth = max(growth, g)
		return err
	}, func(i int) error {
		pr, pw := io.Pipe()
		go func() {
			tw := tar.NewWriter(pw)
			err := tw.WriteHeader(&tar.Header{Name: "workspace/stream-raw", Mode: 0o644, Size: size, Typeflag: tar.TypeReg})
			if err == nil {
				_, err = io.Copy(tw, payload(size))
			}
			if err == nil {
				err = tw.Close()
			}
			pw.CloseWithError(err)
		}()
		return e.cli.CopyToContainer(ctx, b.sb.ID(), "/", pr, container.CopyToContainerOptions{})
	})
	row.Note = fmt.Sprintf("%d MiB; caller RSS growth %d MiB (target <=64)", size>>20, growth>>20)
	row.extraMiss = growth > 64<<20
	return row, err
}

func streamReadRow(ctx context.Context, e *env, b *box) (Row, error) {
	size := e.streamSize()
	if err := b.sb.WriteFileStream(ctx, "/workspace/stream-read", payload(size), size); err != nil {
		return Row{}, err
	}
	var growth int64
	row, err := throughputRow(e.iterations(3, 1), func(int) error {
		g, err := rssGrowth(func() error {
			rc, n, err := b.sb.ReadFileStream(ctx, "/workspace/stream-read", size)
			if err != nil {
				return err
			}
			defer func() { _ = rc.Close() }()
			got, err := io.Copy(io.Discard, rc)
			if err == nil && (got != n || n != size) {
				err = fmt.Errorf("read %d of %d bytes", got, size)
			}
			return err
		})
		growth = max(growth, g)
		return err
	}, func(int) error {
		return e.archiveGet(ctx, b.sb.ID(), "/workspace/stream-read")
	})
	row.Note = fmt.Sprintf("%d MiB; caller RSS growth %d MiB (target <=64)", size>>20, growth>>20)
	row.extraMiss = growth > 64<<20
	return row, err
}

func exportRow(ctx context.Context, e *env) (Row, error) {
	if err := e.sb.WriteFiles(ctx, tree("/workspace/export", e.bulkCount())); err != nil {
		return Row{}, err
	}
	return throughputRow(e.iterations(5, 1), func(int) error {
		rc, err := e.p.Export(ctx, e.sid, "/workspace/export")
		if err != nil {
			return err
		}
		defer func() { _ = rc.Close() }()
		_, err = io.Copy(io.Discard, rc)
		return err
	}, func(int) error {
		return e.archiveGet(ctx, e.sb.ID(), "/workspace/export")
	})
}

// provisionColdRow times Provision to the first successful exec against a
// raw create + start + first exec. Removing the container is not part of
// either: each side's teardown runs after its clock stops. The note splits
// each side's median into its sandbox's start and its first exec (over the
// agent, the first exec starts the agent).
func provisionColdRow(ctx context.Context, e *env, b *box) (Row, error) {
	var oursUp, baseUp []time.Duration
	ours, base, err := interleaveUndo(e.iterations(5, 2), func(int) (func(), error) {
		sid := domain.NewID("ses")
		undo := func() { _ = b.p.Reap(context.WithoutCancel(ctx), sid) }
		t0 := time.Now()
		sb, err := b.p.Provision(ctx, sandbox.Spec{SessionID: sid, Image: e.image})
		oursUp = append(oursUp, time.Since(t0))
		if err != nil {
			return undo, err
		}
		return undo, execOK(ctx, sb, 0)
	}, func(int) (func(), error) {
		t0 := time.Now()
		id, undo, err := e.rawStart(ctx)
		baseUp = append(baseUp, time.Since(t0))
		if err != nil {
			return undo, err
		}
		return undo, e.rawExec(ctx, id, "true")
	})
	if err != nil {
		return Row{}, err
	}
	row := latencyResult(ours, base)
	up := func(d []time.Duration) time.Duration { return median(d).Round(time.Millisecond) }
	row.Note = fmt.Sprintf("median start %s ours (Provision), %s raw (create + start)", up(oursUp), up(baseUp))
	return row, nil
}

// rawStart is the baseline's sandbox: create and start a container of the
// sandbox image that stays up, with an init, and the undo that removes it.
func (e *env) rawStart(ctx context.Context) (string, func(), error) {
	init := true
	c, err := e.cli.ContainerCreate(ctx, &container.Config{Image: e.image, Cmd: sandbox.KeepAliveArgv("/workspace"),
		Labels: map[string]string{benchLabel: "1"}}, &container.HostConfig{Init: &init}, nil, nil, "")
	if err != nil {
		return "", nil, err
	}
	undo := func() {
		_ = e.cli.ContainerRemove(context.WithoutCancel(ctx), c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true})
	}
	return c.ID, undo, e.cli.ContainerStart(ctx, c.ID, container.StartOptions{})
}
