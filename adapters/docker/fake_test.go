package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/system"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"
	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// fakeEngine is a stateful fake of the few engine methods the adapter
// calls, for the states a real daemon cannot be forced into: lost races,
// streams that end early or never, failing removals. Behaviour is scripted
// per test through the hook fields; the default is a well-behaved daemon.
type fakeEngine struct {
	mu         sync.Mutex
	containers map[string]*fakeContainer // by id
	images     map[string]bool
	execs      map[string]*fakeExec
	nextID     int
	calls      []string
	inspects   map[string]int // ContainerInspect calls by ref

	// Hooks, each optional.
	onCreate func(name string) error               // before a create takes the name
	onRemove func(id string, n int) error          // n-th removal attempt of id
	onExec   func(argv []string) fakeExecBehaviour // how an exec runs
	pullErr  string                                // a failure reported inside the pull stream
	removals map[string]int

	imageUsers map[string]string   // an image's configured USER
	files      map[string][]byte   // what CopyFromContainer finds, by path, in any container
	logs       string              // what ContainerLogs returns
	noBash     bool                // images have no /bin/bash
	runtimes   map[string][]string // what Info lists besides runc, with its runtimeArgs
	announce   []events.Message    // what Events sends, then it stays open
	topRows    [][]string          // what ContainerTop lists (PID, PGID, STAT)
	topErr     error               // what ContainerTop fails with instead
	lookDelay  time.Duration       // ContainerInspect and ContainerTop take this long (a loaded daemon)
}

// slowLook waits out lookDelay, or until ctx ends (its error).
func (f *fakeEngine) slowLook(ctx context.Context) error {
	f.mu.Lock()
	d := f.lookDelay
	f.mu.Unlock()
	if d == 0 {
		return nil
	}
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

type fakeContainer struct {
	id, name string
	labels   map[string]string
	running  bool
	image    string
	workdir  string
	netMode  container.NetworkMode
	runtime  string
	env      []string
	created  time.Time
}

// fakeExecBehaviour is what one exec does: output on each stream, when its
// stream ends (closeStream), and what inspect reports over time.
type fakeExecBehaviour struct {
	stdout, stderr string
	exitCode       int
	holdStream     bool // the stream never ends (a straggler holds stdout)
	runningPolls   int  // inspect says Running this many times first
	createErr      error
	attachErr      error // the exec's start fails (the daemon answered it with an error)
}

type fakeExec struct {
	b     fakeExecBehaviour
	polls int
	argv  []string
	stdin []byte
}

func newFakeEngine() *fakeEngine {
	return &fakeEngine{containers: map[string]*fakeContainer{}, images: map[string]bool{"img": true},
		execs: map[string]*fakeExec{}, removals: map[string]int{}, inspects: map[string]int{}, imageUsers: map[string]string{}, files: map[string][]byte{}}
}

func (f *fakeEngine) record(call string) {
	f.calls = append(f.calls, call)
}

func (f *fakeEngine) byRef(ref string) *fakeContainer {
	if c, ok := f.containers[ref]; ok {
		return c
	}
	for _, c := range f.containers {
		if c.name == ref {
			return c
		}
	}
	return nil
}

func notFound(what string) error { return fmt.Errorf("no such %s: %w", what, cerrdefs.ErrNotFound) }

func (f *fakeEngine) Info(context.Context) (system.Info, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	rts := map[string]system.RuntimeWithStatus{"runc": {}}
	for name, args := range f.runtimes {
		rts[name] = system.RuntimeWithStatus{Runtime: system.Runtime{Path: "/usr/bin/" + name, Args: args}}
	}
	return system.Info{NCPU: 2, Runtimes: rts}, nil
}

func (f *fakeEngine) ImageInspect(_ context.Context, ref string, _ ...client.ImageInspectOption) (image.InspectResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.images[ref] {
		return image.InspectResponse{}, notFound("image")
	}
	return image.InspectResponse{ID: ref, Config: &dockerspec.DockerOCIImageConfig{
		ImageConfig: ocispec.ImageConfig{User: f.imageUsers[ref]}}}, nil
}

func (f *fakeEngine) ImagePull(_ context.Context, ref string, _ image.PullOptions) (io.ReadCloser, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("pull " + ref)
	if f.pullErr != "" {
		return io.NopCloser(strings.NewReader(`{"errorDetail":{"message":"` + f.pullErr + `"},"error":"` + f.pullErr + `"}` + "\n")), nil
	}
	f.images[ref] = true
	return io.NopCloser(strings.NewReader(`{"status":"pulled"}` + "\n")), nil
}

func (f *fakeEngine) ContainerCreate(_ context.Context, cfg *container.Config, host *container.HostConfig, _ *network.NetworkingConfig, _ *ocispec.Platform, name string) (container.CreateResponse, error) {
	if f.onCreate != nil {
		if err := f.onCreate(name); err != nil {
			return container.CreateResponse{}, err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("create " + name)
	if f.byRef(name) != nil {
		return container.CreateResponse{}, fmt.Errorf("name %q in use: %w", name, cerrdefs.ErrConflict)
	}
	f.nextID++
	c := &fakeContainer{id: fmt.Sprintf("c%d", f.nextID), name: name, labels: cfg.Labels, image: cfg.Image,
		workdir: cfg.WorkingDir, netMode: host.NetworkMode, runtime: host.Runtime, env: cfg.Env, created: time.Now()}
	f.containers[c.id] = c
	return container.CreateResponse{ID: c.id}, nil
}

// addContainer puts a container in place as another party would have.
func (f *fakeEngine) addContainer(c fakeContainer) *fakeContainer {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextID++
	c.id = fmt.Sprintf("c%d", f.nextID)
	f.containers[c.id] = &c
	return &c
}

func (f *fakeEngine) ContainerStart(_ context.Context, id string, _ container.StartOptions) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("start " + id)
	c := f.byRef(id)
	if c == nil {
		return notFound("container")
	}
	c.running = true
	return nil
}

func (f *fakeEngine) ContainerInspect(ctx context.Context, ref string) (container.InspectResponse, error) {
	if err := f.slowLook(ctx); err != nil {
		return container.InspectResponse{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.inspects[ref]++
	c := f.byRef(ref)
	if c == nil {
		return container.InspectResponse{}, notFound("container")
	}
	return container.InspectResponse{
		ContainerJSONBase: &container.ContainerJSONBase{ID: c.id, Name: "/" + c.name, Created: c.created.Format(time.RFC3339Nano),
			State: &container.State{Running: c.running}, HostConfig: &container.HostConfig{NetworkMode: c.netMode}},
		Config: &container.Config{Image: c.image, WorkingDir: c.workdir, Labels: c.labels},
	}, nil
}

func (f *fakeEngine) ContainerList(_ context.Context, opts container.ListOptions) ([]container.Summary, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []container.Summary
	for _, c := range f.containers {
		match := true
		for _, l := range opts.Filters.Get("label") {
			k, v, hasV := strings.Cut(l, "=")
			got, ok := c.labels[k]
			match = match && ok && (!hasV || got == v)
		}
		if match {
			out = append(out, container.Summary{ID: c.id, Labels: c.labels})
		}
	}
	return out, nil
}

func (f *fakeEngine) ContainerRemove(_ context.Context, id string, _ container.RemoveOptions) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("remove " + id)
	f.removals[id]++
	if f.onRemove != nil {
		if err := f.onRemove(id, f.removals[id]); err != nil {
			return err
		}
	}
	if f.byRef(id) == nil {
		return notFound("container")
	}
	delete(f.containers, f.byRef(id).id)
	return nil
}

func (f *fakeEngine) ContainerTop(ctx context.Context, _ string, _ []string) (container.TopResponse, error) {
	if err := f.slowLook(ctx); err != nil {
		return container.TopResponse{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.topErr != nil {
		return container.TopResponse{}, f.topErr
	}
	return container.TopResponse{Titles: []string{"PID", "PGID", "STAT"}, Processes: f.topRows}, nil
}

func (f *fakeEngine) ContainerExecCreate(_ context.Context, id string, opts container.ExecOptions) (container.ExecCreateResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.byRef(id)
	if c == nil {
		return container.ExecCreateResponse{}, notFound("container")
	}
	if !c.running {
		return container.ExecCreateResponse{}, fmt.Errorf("container %s is not running: %w", id, cerrdefs.ErrConflict)
	}
	var b fakeExecBehaviour
	if f.onExec != nil {
		b = f.onExec(opts.Cmd)
	}
	if b.createErr != nil {
		return container.ExecCreateResponse{}, b.createErr
	}
	f.nextID++
	eid := fmt.Sprintf("e%d", f.nextID)
	f.execs[eid] = &fakeExec{b: b, argv: opts.Cmd}
	return container.ExecCreateResponse{ID: eid}, nil
}

func (f *fakeEngine) ContainerExecAttach(_ context.Context, execID string, _ container.ExecAttachOptions) (types.HijackedResponse, error) {
	f.mu.Lock()
	e := f.execs[execID]
	f.mu.Unlock()
	if e.b.attachErr != nil {
		return types.HijackedResponse{}, e.b.attachErr
	}
	ours, theirs := net.Pipe()
	go func() {
		// The "daemon" side: swallow stdin, write the framed output, end
		// the stream unless a straggler holds it.
		go func() {
			b, _ := io.ReadAll(theirs)
			f.mu.Lock()
			e.stdin = b
			f.mu.Unlock()
		}()
		_, _ = stdcopy.NewStdWriter(theirs, stdcopy.Stdout).Write([]byte(e.b.stdout))
		_, _ = stdcopy.NewStdWriter(theirs, stdcopy.Stderr).Write([]byte(e.b.stderr))
		if !e.b.holdStream {
			_ = theirs.Close()
		}
	}()
	return types.NewHijackedResponse(ours, "application/vnd.docker.multiplexed-stream"), nil
}

func (f *fakeEngine) ContainerExecInspect(_ context.Context, execID string) (container.ExecInspect, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e := f.execs[execID]
	if e == nil {
		return container.ExecInspect{}, notFound("exec")
	}
	e.polls++
	if e.polls <= e.b.runningPolls {
		return container.ExecInspect{ExecID: execID, Running: true, Pid: 4242}, nil
	}
	return container.ExecInspect{ExecID: execID, ExitCode: e.b.exitCode, Pid: 4242}, nil
}

func (f *fakeEngine) CopyToContainer(_ context.Context, id, path string, content io.Reader, _ container.CopyToContainerOptions) error {
	f.mu.Lock()
	f.record("copy-to " + id + " " + path)
	f.mu.Unlock()
	_, err := io.Copy(io.Discard, content)
	return err
}

func (f *fakeEngine) CopyFromContainer(_ context.Context, _, path string) (io.ReadCloser, container.PathStat, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	data, ok := f.files[path]
	if !ok {
		return nil, container.PathStat{}, notFound("path")
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	_ = tw.WriteHeader(&tar.Header{Name: "f", Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg})
	_, _ = tw.Write(data)
	_ = tw.Close()
	return io.NopCloser(&buf), container.PathStat{Size: int64(len(data))}, nil
}

func (f *fakeEngine) ContainerRestart(_ context.Context, id string, _ container.StopOptions) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("restart " + id)
	c := f.byRef(id)
	if c == nil {
		return notFound("container")
	}
	c.running = true
	return nil
}

func (f *fakeEngine) ContainerLogs(context.Context, string, container.LogsOptions) (io.ReadCloser, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var buf bytes.Buffer
	_, _ = stdcopy.NewStdWriter(&buf, stdcopy.Stderr).Write([]byte(f.logs))
	return io.NopCloser(&buf), nil
}

var _ engine = (*fakeEngine)(nil)

// ContainerStatPath finds every path of files, and /bin/bash unless noBash.
func (f *fakeEngine) VolumeCreate(_ context.Context, opts volume.CreateOptions) (volume.Volume, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("volume create " + opts.Name)
	return volume.Volume{Name: opts.Name}, nil
}

func (f *fakeEngine) ContainerStatPath(_ context.Context, _, path string) (container.PathStat, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("stat " + path)
	if data, ok := f.files[path]; ok {
		return container.PathStat{Name: path, Size: int64(len(data)), Mode: 0o644}, nil
	}
	if path == sandboxShell && !f.noBash {
		return container.PathStat{Name: "bash", Mode: 0o755}, nil
	}
	return container.PathStat{}, notFound("path")
}

// Events announces what the test scripted (nothing by default: the fake's
// containers never go away by themselves), then stays open.
func (f *fakeEngine) Events(context.Context, events.ListOptions) (<-chan events.Message, <-chan error) {
	f.record("events")
	f.mu.Lock()
	defer f.mu.Unlock()
	msgs := make(chan events.Message, len(f.announce))
	for _, m := range f.announce {
		msgs <- m
	}
	return msgs, nil
}
