package agentclient

import (
	"context"
	"errors"
	"io"
	"net"

	"github.com/sandgate/sandgate/core/sandbox"
)

// DataPlane is the part of ports.Sandbox that runs inside the sandbox:
// what the agent carries, and what each backend's engine-exec path (the
// fallback) implements too.
type DataPlane interface {
	Exec(ctx context.Context, req sandbox.ExecRequest) (sandbox.ExecResult, error)
	ReadFile(ctx context.Context, path string) ([]byte, error)
	ReadFileStream(ctx context.Context, path string, maxBytes int64) (io.ReadCloser, int64, error)
	WriteFile(ctx context.Context, path string, data []byte) error
	WriteFileStream(ctx context.Context, path string, src io.Reader, size int64) error
	WriteFiles(ctx context.Context, files []sandbox.FileWrite) error
	Stat(ctx context.Context, path string) (sandbox.FileInfo, error)
	List(ctx context.Context, path string) ([]sandbox.FileInfo, error)
	Remove(ctx context.Context, path string, recursive bool) error
	Mkdir(ctx context.Context, path string, parents bool) error
}

// Plane is a sandbox handle's DataPlane: every operation goes through the
// agent when the sandbox has one (Conn), else through Fallback. Both
// answer the same contract. A backend's handle embeds it.
type Plane struct {
	// Conn is the sandbox's agent; nil: the sandbox has none.
	Conn *Conn
	// Fallback is the backend's engine-exec path.
	Fallback DataPlane
	// Lost turns a call whose agent stream was lost (ErrLost) into the
	// backend's answer: sandbox.ErrNotFound when the sandbox itself went
	// away (C-EXEC-5), else the error.
	Lost func(ctx context.Context, err error) error
	// Workdir is sent with every exec (empty: the agent's own).
	Workdir string
	// BulkRoot is WriteFiles' workdir, for core/sandbox's member checks.
	BulkRoot string
	// KillGroup and GroupAlive are the exec backstop (ExecOptions).
	KillGroup  func(ctx context.Context, pid int)
	GroupAlive func(ctx context.Context, pid int) (bool, error)
	// Archive, when set, carries over the agent the bodies Rule sends it,
	// the agent checking the paths before and the result after
	// (archive.go); nil: the agent's stream carries every body (Kubernetes
	// has no such endpoint).
	Archive Archive
	Rule    ArchiveRule
	// Observe, when set, is told which path each operation takes (agent
	// true, fallback false): the executor counts them in /metrics.
	Observe func(ctx context.Context, agent bool)
}

var _ DataPlane = Plane{}

// route runs op over the agent, or fallback without one.
func route[T any](ctx context.Context, p Plane, op func(*Conn) (T, error), fallback func() (T, error)) (T, error) {
	if p.Observe != nil {
		p.Observe(ctx, p.Conn != nil)
	}
	if p.Conn == nil {
		return fallback()
	}
	v, err := op(p.Conn)
	if errors.Is(err, ErrLost) && p.Lost != nil {
		return v, p.Lost(ctx, err)
	}
	return v, err
}

func routeErr(ctx context.Context, p Plane, op func(*Conn) error, fallback func() error) error {
	_, err := route(ctx, p, func(c *Conn) (struct{}, error) { return struct{}{}, op(c) },
		func() (struct{}, error) { return struct{}{}, fallback() })
	return err
}

// Exec implements ports.Sandbox (C-EXEC-1..5).
func (p Plane) Exec(ctx context.Context, req sandbox.ExecRequest) (sandbox.ExecResult, error) {
	return route(ctx, p, func(c *Conn) (sandbox.ExecResult, error) {
		return c.Exec(ctx, req, ExecOptions{Workdir: p.Workdir, KillGroup: p.KillGroup, GroupAlive: p.GroupAlive})
	}, func() (sandbox.ExecResult, error) { return p.Fallback.Exec(ctx, req) })
}

// ReadFile implements ports.Sandbox (C-READ-1).
func (p Plane) ReadFile(ctx context.Context, path string) ([]byte, error) {
	return route(ctx, p, func(c *Conn) ([]byte, error) { return c.ReadFile(ctx, path) },
		func() ([]byte, error) { return p.Fallback.ReadFile(ctx, path) })
}

// ReadFileStream implements ports.Sandbox (C-READ-2).
func (p Plane) ReadFileStream(ctx context.Context, path string, maxBytes int64) (io.ReadCloser, int64, error) {
	type sized struct {
		rc io.ReadCloser
		n  int64
	}
	r, err := route(ctx, p, func(c *Conn) (sized, error) {
		if p.Archive != nil {
			rc, n, err := p.readArchived(ctx, c, path, maxBytes)
			return sized{rc, n}, err
		}
		rc, n, err := c.ReadFileStream(ctx, path, maxBytes)
		return sized{rc, n}, err
	}, func() (sized, error) {
		rc, n, err := p.Fallback.ReadFileStream(ctx, path, maxBytes)
		return sized{rc, n}, err
	})
	return r.rc, r.n, err
}

// WriteFile implements ports.Sandbox (C-WRITE-*).
func (p Plane) WriteFile(ctx context.Context, path string, data []byte) error {
	return routeErr(ctx, p, func(c *Conn) error { return c.WriteFile(ctx, path, data) },
		func() error { return p.Fallback.WriteFile(ctx, path, data) })
}

// WriteFileStream implements ports.Sandbox (C-STREAM-1).
func (p Plane) WriteFileStream(ctx context.Context, path string, src io.Reader, size int64) error {
	return routeErr(ctx, p, func(c *Conn) error {
		if p.Archive != nil && size > p.Rule.WriteAbove {
			return p.writeArchived(ctx, c, path, src, size)
		}
		return c.WriteFileStream(ctx, path, src, size)
	},
		func() error { return p.Fallback.WriteFileStream(ctx, path, src, size) })
}

// WriteFiles implements ports.Sandbox (C-BULK-1..3).
func (p Plane) WriteFiles(ctx context.Context, files []sandbox.FileWrite) error {
	return routeErr(ctx, p, func(c *Conn) error {
		if p.Archive != nil && p.Rule.bulk(files) {
			return p.writeFilesArchived(ctx, c, files)
		}
		return c.WriteFiles(ctx, p.BulkRoot, files)
	},
		func() error { return p.Fallback.WriteFiles(ctx, files) })
}

// Stat implements ports.Sandbox (C-FS-1).
func (p Plane) Stat(ctx context.Context, path string) (sandbox.FileInfo, error) {
	return route(ctx, p, func(c *Conn) (sandbox.FileInfo, error) { return c.Stat(ctx, path) },
		func() (sandbox.FileInfo, error) { return p.Fallback.Stat(ctx, path) })
}

// List implements ports.Sandbox (C-FS-2).
func (p Plane) List(ctx context.Context, path string) ([]sandbox.FileInfo, error) {
	return route(ctx, p, func(c *Conn) ([]sandbox.FileInfo, error) { return c.List(ctx, path) },
		func() ([]sandbox.FileInfo, error) { return p.Fallback.List(ctx, path) })
}

// Remove implements ports.Sandbox (C-FS-3).
func (p Plane) Remove(ctx context.Context, path string, recursive bool) error {
	return routeErr(ctx, p, func(c *Conn) error { return c.Remove(ctx, path, recursive) },
		func() error { return p.Fallback.Remove(ctx, path, recursive) })
}

// Mkdir implements ports.Sandbox (C-FS-4).
func (p Plane) Mkdir(ctx context.Context, path string, parents bool) error {
	return routeErr(ctx, p, func(c *Conn) error { return c.Mkdir(ctx, path, parents) },
		func() error { return p.Fallback.Mkdir(ctx, path, parents) })
}

// DialPort implements ports.Sandbox (C-PORT-1): over the agent (Conn.Dial);
// a sandbox without one answers sandbox.ErrNoAgent, its engine-exec path
// having no raw byte stream to carry.
func (p Plane) DialPort(ctx context.Context, port int) (net.Conn, error) {
	return route(ctx, p, func(c *Conn) (net.Conn, error) { return c.Dial(ctx, port) },
		func() (net.Conn, error) {
			if err := sandbox.CheckPort(port); err != nil {
				return nil, err
			}
			return nil, sandbox.ErrNoAgent
		})
}
