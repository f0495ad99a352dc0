package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/sandgate/sandgate/adapters/internal/agentclient"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/ports"
)

// handle is ports.Sandbox for one container.
type handle struct {
	p       *Provider
	id      string // container id
	sid     string
	workdir string
	gate    string // the paired gate's container id; empty when ungated
	// gvisor: the container runs under runsc, whose pids the engine's top
	// cannot show (it filters the host's ps by the Sentry's pids).
	gvisor bool
	// Plane carries Exec and the file operations: over the sandbox's
	// agent, or its fallback, scripts (engine execs of the core's scripts).
	agentclient.Plane
}

// scripts is a handle's fallback data plane (exec.go, files.go, bulk.go;
// stat, list, remove and mkdir are the shared MetaScripts on runScript,
// which win over the handle's own Plane methods by being shallower).
type scripts struct {
	*handle
	agentclient.MetaScripts
}

var _ ports.Sandbox = (*handle)(nil)

// handle is the handle of container id; agent says whether the container
// mounts the agent.
func (p *Provider) handle(id string, spec sandbox.Spec, gate string, agent bool) *handle {
	h := &handle{p: p, id: id, sid: spec.SessionID.String(), workdir: spec.Workdir, gate: gate,
		gvisor: spec.Isolation == sandbox.IsolationGVisor}
	h.Plane = agentclient.Plane{Fallback: scripts{h, agentclient.MetaScripts{Run: h.runScript}}, Lost: h.lost, BulkRoot: spec.Workdir,
		KillGroup: agentclient.KillGroupVia(h.runCode), GroupAlive: agentclient.GroupAliveVia(h.runCode),
		Observe: p.opts.ObserveDataPlane}
	if agent {
		h.Conn = p.agents.conns.Get(h.sid, id, p.openAgent(id, spec.Workdir))
		h.Archive, h.Rule = engineArchive{h}, archiveRule
	}
	return h
}

// ID implements ports.Sandbox: the container id.
func (s *handle) ID() string { return s.id }

// Destroy implements ports.Sandbox: removes this container (not a newer one
// of the same session) with its volumes, then its gate, which serves no
// other sandbox, and waits until they are gone.
func (s *handle) Destroy(ctx context.Context) error {
	for _, id := range []string{s.id, s.gate} {
		if id == "" {
			continue
		}
		if err := s.p.remove(ctx, id); err != nil {
			return err
		}
		s.p.swept.Delete(id)
		s.p.agents.conns.Forget(s.sid, id)
		err := s.p.waitGone(ctx, func(ctx context.Context) (bool, error) {
			_, err := s.p.eng.ContainerInspect(ctx, id)
			if cerrdefs.IsNotFound(err) {
				return true, nil
			}
			return false, translate(err, "inspect "+id)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// startExec creates and attaches one exec. A container that is gone or no
// longer running is ErrNotFound: a handle is for a running sandbox (C-EXEC-5).
func (s *handle) startExec(ctx context.Context, argv []string, stdin bool) (string, *hijacked, error) {
	created, err := s.p.eng.ContainerExecCreate(ctx, s.id, container.ExecOptions{
		Cmd: argv, WorkingDir: s.workdir, AttachStdin: stdin, AttachStdout: true, AttachStderr: true,
	})
	if err != nil {
		return "", nil, execErr(err)
	}
	hij, err := s.p.eng.ContainerExecAttach(ctx, created.ID, container.ExecAttachOptions{})
	if err != nil {
		return "", nil, execErr(err)
	}
	return created.ID, &hijacked{resp: hij}, nil
}

// execErr translates an exec create/attach failure: the daemon answers 409
// "is not running" for a stopped container, which to a handle is gone.
func execErr(err error) error {
	if cerrdefs.IsConflict(err) && strings.Contains(err.Error(), "not running") {
		return fmt.Errorf("docker exec: sandbox is not running: %w", sandbox.ErrNotFound)
	}
	return translate(err, "exec")
}

// runScript runs one of the core's scripts to completion: stdin (nil for
// none) is copied in and closed, stdout goes to out (nil discards), stderr is
// kept, capped, for classification. err is a transport failure, a gone
// sandbox, the context, or the source's own read error (the script then saw
// a short body and removed its temporary file).
func (s *handle) runScript(ctx context.Context, argv []string, stdin io.Reader, out io.Writer) (code int, stderr string, err error) {
	code, stderr, err = s.runScriptOnce(ctx, argv, stdin, out)
	if s.lostSandbox(ctx, err, code, time.Time{}) {
		return 0, "", errGone
	}
	return code, stderr, err
}

// runScriptOnce is runScript without the final look at the sandbox. A
// sandbox the engine is ending has its stream closed, which unblocks the
// daemon's stdin copy (it can otherwise wait minutes). On the
// error paths the pump is not waited for: it ends at its source's next
// return, the source being the caller's.
func (s *handle) runScriptOnce(ctx context.Context, argv []string, stdin io.Reader, out io.Writer) (code int, stderr string, err error) {
	// The watch starts first: a daemon ending the sandbox can hold the
	// attach itself.
	wctx, cut := context.WithCancelCause(ctx)
	defer cut(nil)
	stopWatch := s.watchGone(ctx, time.Now(), func() { cut(errCut) })
	defer stopWatch()
	execID, hij, err := s.startExec(wctx, argv, stdin != nil)
	if err != nil {
		return 0, "", cutOr(wctx, err)
	}
	defer hij.Close()
	stop := context.AfterFunc(wctx, hij.Close)
	defer stop()
	pumpErr := make(chan error, 1)
	if stdin != nil {
		go func() { pumpErr <- hij.pump(stdin) }()
	} else {
		pumpErr <- nil
	}
	if out == nil {
		out = io.Discard
	}
	errBuf := sandbox.NewCapture(64 << 10)
	_, copyErr := stdcopy.StdCopy(out, errBuf, hij.resp.Reader)
	if ctx.Err() != nil {
		return 0, "", fmt.Errorf("docker exec: %w", ctx.Err())
	}
	if errors.Is(context.Cause(wctx), errCut) {
		return 0, "", errCut
	}
	if copyErr != nil {
		return 0, "", fmt.Errorf("docker exec: reading output: %w", copyErr)
	}
	ins, err := s.p.eng.ContainerExecInspect(wctx, execID)
	if err != nil {
		return 0, "", cutOr(wctx, translate(err, "exec inspect"))
	}
	if perr := <-pumpErr; perr != nil {
		return 0, "", perr
	}
	return ins.ExitCode, errBuf.String(), nil
}

// cutOr is errCut when the watch cut ctx, else err.
func cutOr(ctx context.Context, err error) error {
	if errors.Is(context.Cause(ctx), errCut) {
		return errCut
	}
	return err
}

// hijacked makes the attach connection's Close idempotent and safe from
// several goroutines (a context's AfterFunc and the deferred close).
type hijacked struct {
	resp types.HijackedResponse
	once sync.Once
}

func (h *hijacked) Close() { h.once.Do(h.resp.Close) }

// pump copies src to the exec's stdin and closes the write side so the
// script sees EOF. A read failure of src is returned (the script sees a
// short body); a write failure means the exec ended early, which its exit
// code explains.
func (h *hijacked) pump(src io.Reader) error {
	_, err := io.Copy(h.resp.Conn, srcReader{src})
	_ = h.resp.CloseWrite()
	var se srcError
	if errors.As(err, &se) {
		return fmt.Errorf("reading the source: %w", se.err)
	}
	return nil
}

// srcReader tags the source's own errors, to tell them from the
// connection's in pump.
type srcReader struct{ r io.Reader }

func (s srcReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		err = srcError{err}
	}
	return n, err
}

type srcError struct{ err error }

func (e srcError) Error() string { return e.err.Error() }
func (e srcError) Unwrap() error { return e.err }
