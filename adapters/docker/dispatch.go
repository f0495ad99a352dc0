package docker

import (
	"context"
	"io"

	"github.com/sandgate/sandgate/adapters/internal/agentclient"
	"github.com/sandgate/sandgate/core/sandbox"
)

// The data plane of a handle: each operation goes through the sandbox's
// agent when it has one, else through the engine execs of the fallback
// path (exec.go, files.go, bulk.go). Both answer the same contract.

// Exec implements ports.Sandbox (C-EXEC-1..5).
func (s *handle) Exec(ctx context.Context, req sandbox.ExecRequest) (sandbox.ExecResult, error) {
	return agentOr(ctx, s, func(c *agentclient.Conn) (sandbox.ExecResult, error) {
		return c.Exec(ctx, req, agentclient.ExecOptions{KillGroup: s.killGroupOutside})
	}, func() (sandbox.ExecResult, error) { return s.execScript(ctx, req) })
}

// ReadFile implements ports.Sandbox (C-READ-1).
func (s *handle) ReadFile(ctx context.Context, path string) ([]byte, error) {
	return agentOr(ctx, s, func(c *agentclient.Conn) ([]byte, error) {
		return c.ReadFile(ctx, path)
	}, func() ([]byte, error) { return s.readFileScript(ctx, path) })
}

// ReadFileStream implements ports.Sandbox (C-READ-2).
func (s *handle) ReadFileStream(ctx context.Context, path string, maxBytes int64) (io.ReadCloser, int64, error) {
	type sized struct {
		rc io.ReadCloser
		n  int64
	}
	r, err := agentOr(ctx, s, func(c *agentclient.Conn) (sized, error) {
		rc, n, err := c.ReadFileStream(ctx, path, maxBytes)
		return sized{rc, n}, err
	}, func() (sized, error) {
		rc, n, err := s.readFileStreamScript(ctx, path, maxBytes)
		return sized{rc, n}, err
	})
	return r.rc, r.n, err
}

// WriteFile implements ports.Sandbox (C-WRITE-*).
func (s *handle) WriteFile(ctx context.Context, path string, data []byte) error {
	return s.agentOrErr(ctx, func(c *agentclient.Conn) error {
		return c.WriteFile(ctx, path, data)
	}, func() error { return s.writeFileScript(ctx, path, data) })
}

// WriteFileStream implements ports.Sandbox (C-STREAM-1), never buffering
// the payload.
func (s *handle) WriteFileStream(ctx context.Context, path string, src io.Reader, size int64) error {
	return s.agentOrErr(ctx, func(c *agentclient.Conn) error {
		return c.WriteFileStream(ctx, path, src, size)
	}, func() error { return s.writeFileStreamScript(ctx, path, src, size) })
}

// WriteFiles implements ports.Sandbox (C-BULK-1..3).
func (s *handle) WriteFiles(ctx context.Context, files []sandbox.FileWrite) error {
	return s.agentOrErr(ctx, func(c *agentclient.Conn) error {
		return c.WriteFiles(ctx, s.workdir, files)
	}, func() error { return s.writeFilesScript(ctx, files) })
}

func (s *handle) agentOrErr(ctx context.Context, op func(*agentclient.Conn) error, fallback func() error) error {
	_, err := agentOr(ctx, s, func(c *agentclient.Conn) (struct{}, error) { return struct{}{}, op(c) },
		func() (struct{}, error) { return struct{}{}, fallback() })
	return err
}

// killGroupOutside SIGKILLs process group pid with an engine exec of the
// core's kill script: the agent's backstop. It does not wait.
func (s *handle) killGroupOutside(ctx context.Context, pid int) {
	argv, err := sandbox.KillGroupArgv(pid)
	if err != nil {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sandbox.ReturnGrace)
		defer cancel()
		_, _, _ = s.runScript(ctx, argv, nil, nil)
	}()
}
