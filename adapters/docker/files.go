package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/docker/docker/pkg/stdcopy"

	"github.com/sandgate/sandgate/core/sandbox"
)

// WriteFile implements ports.Sandbox: one exec of the core's write script
// with the bytes on stdin (C-WRITE-*).
func (s *handle) WriteFile(ctx context.Context, path string, data []byte) error {
	return s.WriteFileStream(ctx, path, bytes.NewReader(data), int64(len(data)))
}

// WriteFileStream implements ports.Sandbox (C-STREAM-1). The script judges
// the length: it is offered at most size+1 bytes, so a long source is seen
// as long without reading all of it, and the payload streams through
// without being buffered here.
func (s *handle) WriteFileStream(ctx context.Context, path string, src io.Reader, size int64) error {
	argv, err := sandbox.WriteArgs(path, size)
	if err != nil {
		return err
	}
	code, stderr, err := s.runScript(ctx, argv, io.LimitReader(src, size+1), nil)
	if err != nil {
		return fmt.Errorf("write %q: %w", path, err)
	}
	return sandbox.ClassifyWrite(path, code, stderr)
}

// ReadFile implements ports.Sandbox: at most MaxFileBytes (C-READ-1).
func (s *handle) ReadFile(ctx context.Context, path string) ([]byte, error) {
	rc, n, err := s.ReadFileStream(ctx, path, sandbox.MaxFileBytes)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	buf := make([]byte, n)
	if _, err := io.ReadFull(rc, buf); err != nil {
		return nil, fmt.Errorf("read %q: %w", path, err)
	}
	return buf, nil
}

// ReadFileStream implements ports.Sandbox (C-READ-2): one exec of the read
// script, whose stdout — a size header, then the bytes — streams straight
// through a pipe, so memory stays bounded whatever the size.
func (s *handle) ReadFileStream(ctx context.Context, path string, maxBytes int64) (io.ReadCloser, int64, error) {
	argv, err := sandbox.ReadArgs(path, maxBytes)
	if err != nil {
		return nil, 0, err
	}
	execID, hij, err := s.startExec(ctx, argv, false)
	if err != nil {
		return nil, 0, fmt.Errorf("read %q: %w", path, err)
	}
	stop := context.AfterFunc(ctx, hij.Close)
	pr, pw := io.Pipe()
	stderr := sandbox.NewCapture(64 << 10)
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, err := stdcopy.StdCopy(pw, stderr, hij.resp.Reader)
		pw.CloseWithError(err) // nil: EOF
	}()
	r := &readStream{pr: pr, hij: hij, copied: copied, stop: stop}
	n, err := sandbox.ParseReadHeader(pr, maxBytes)
	if err == nil {
		r.left = n
		return r, n, nil
	}
	r.Close()
	if ctx.Err() != nil {
		return nil, 0, fmt.Errorf("read %q: %w", path, ctx.Err())
	}
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, 0, fmt.Errorf("read %q: %w", path, err)
	}
	// No header: the script refused; its exit code says why.
	ins, ierr := s.p.eng.ContainerExecInspect(ctx, execID)
	if ierr != nil {
		return nil, 0, translate(ierr, "exec inspect")
	}
	if ins.ExitCode == 0 {
		return nil, 0, fmt.Errorf("read %q: the read script printed no header", path)
	}
	return nil, 0, sandbox.ClassifyRead(path, ins.ExitCode, stderr.String())
}

// readStream yields exactly the announced number of bytes; a stream that
// ends early is io.ErrUnexpectedEOF, never a short clean read.
type readStream struct {
	pr     *io.PipeReader
	hij    *hijacked
	copied <-chan struct{}
	stop   func() bool
	left   int64
	once   sync.Once
}

func (r *readStream) Read(p []byte) (int, error) {
	if r.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > r.left {
		p = p[:r.left]
	}
	n, err := r.pr.Read(p)
	r.left -= int64(n)
	if errors.Is(err, io.EOF) && r.left > 0 {
		err = io.ErrUnexpectedEOF
	}
	if err == nil && r.left == 0 {
		err = io.EOF
	}
	return n, err
}

// Close ends the exec's stream; safe to call twice.
func (r *readStream) Close() error {
	r.once.Do(func() {
		r.stop()
		r.hij.Close()
		_ = r.pr.Close()
		<-r.copied
	})
	return nil
}
