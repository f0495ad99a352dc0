package executor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/core/session"
	"github.com/sandgate/sandgate/ports"
)

// Exec runs one command in the session's sandbox.
func (s *Service) Exec(ctx context.Context, sid domain.ID, req sandbox.ExecRequest) (sandbox.ExecResult, error) {
	if err := session.CheckExec(req); err != nil {
		return sandbox.ExecResult{}, err
	}
	retry := always
	if req.Output != nil {
		// A streamed exec is run again on a fresh handle only if nothing
		// reached the caller: a second run's pieces would restart at
		// offset 0 after the first run's.
		sink := &seenSink{OutputSink: req.Output}
		req.Output, retry = sink, func() bool { return !sink.seen.Load() }
	}
	var res sandbox.ExecResult
	err := s.call(ctx, sid, retry, func(sb ports.Sandbox) (err error) {
		res, err = sb.Exec(ctx, req)
		return err
	})
	return res, err
}

// seenSink remembers whether any output went through it.
type seenSink struct {
	sandbox.OutputSink
	seen atomic.Bool
}

func (s *seenSink) Output(stream sandbox.Stream, offset int64, data []byte) {
	s.seen.Store(true)
	s.OutputSink.Output(stream, offset, data)
}

// ReadFile streams a file out of the session's sandbox. The session counts
// as busy until the stream is closed.
func (s *Service) ReadFile(ctx context.Context, sid domain.ID, path string, maxBytes int64) (io.ReadCloser, int64, error) {
	if err := session.CheckPath("path", path); err != nil {
		return nil, 0, err
	}
	if maxBytes <= 0 {
		return nil, 0, fmt.Errorf("%w: max_bytes: must be positive, got %d", session.ErrInvalidRequest, maxBytes)
	}
	var rc io.ReadCloser
	var size int64
	end, err := s.begin(ctx, sid)
	if err != nil {
		return nil, 0, err
	}
	err = s.withSandbox(ctx, sid, always, func(sb ports.Sandbox) (err error) {
		rc, size, err = sb.ReadFileStream(ctx, path, maxBytes)
		return err
	})
	if err != nil {
		end()
		return nil, 0, err
	}
	return &endOnClose{ReadCloser: rc, end: end}, size, nil
}

// WriteFile streams size bytes from src into a file of the session's sandbox.
func (s *Service) WriteFile(ctx context.Context, sid domain.ID, path string, src io.Reader, size int64) error {
	if err := session.CheckPath("path", path); err != nil {
		return err
	}
	if err := sandbox.CheckWriteSize(size); err != nil {
		return fmt.Errorf("%w: size: %w", session.ErrInvalidRequest, err)
	}
	counted := &countingReader{r: src}
	// A stale handle may be retried only while nothing of src was consumed.
	return s.call(ctx, sid, func() bool { return counted.n == 0 }, func(sb ports.Sandbox) error {
		return sb.WriteFileStream(ctx, path, counted, size)
	})
}

// WriteFiles writes a batch into the session's sandbox.
func (s *Service) WriteFiles(ctx context.Context, sid domain.ID, files []sandbox.FileWrite) error {
	if err := session.CheckBatch(files); err != nil {
		return err
	}
	return s.call(ctx, sid, always, func(sb ports.Sandbox) error { return sb.WriteFiles(ctx, files) })
}

// Export streams root out of the session's sandbox as a tar; the session
// counts as busy until the stream is closed.
func (s *Service) Export(ctx context.Context, sid domain.ID, root string) (io.ReadCloser, error) {
	if err := session.CheckExportRoot(root); err != nil {
		return nil, err
	}
	end, err := s.begin(ctx, sid)
	if err != nil {
		return nil, err
	}
	rc, err := s.provider.Export(ctx, sid, root)
	if err != nil {
		end()
		return nil, err
	}
	return &endOnClose{ReadCloser: rc, end: end}, nil
}

func always() bool { return true }

// call runs fn on the session's sandbox as one tracked call.
func (s *Service) call(ctx context.Context, sid domain.ID, retry func() bool, fn func(ports.Sandbox) error) error {
	end, err := s.begin(ctx, sid)
	if err != nil {
		return err
	}
	defer end()
	return s.withSandbox(ctx, sid, retry, fn)
}

// begin counts a call on the session until end; a write
// of the activity to the store is made when one is due. A session being
// reaped answers sandbox.ErrNotFound: its sandbox is going away.
func (s *Service) begin(ctx context.Context, sid domain.ID) (end func(), err error) {
	touch, ok := s.activity.begin(sid, s.now())
	if !ok {
		return nil, fmt.Errorf("session %s is being reaped: %w", sid, sandbox.ErrNotFound)
	}
	if touch {
		s.touch(ctx, sid)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			if s.activity.end(sid, s.now()) {
				s.touch(ctx, sid)
			}
		})
	}, nil
}

// touch writes the session's activity; a failure is logged, not the
// call's: the heartbeat writes it again.
func (s *Service) touch(ctx context.Context, sid domain.ID) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), touchTimeout)
	defer cancel()
	if err := s.store.Touch(ctx, sid, s.now()); err != nil {
		s.log.Warn("record session activity", "session", sid, "error", err)
	}
}

// withSandbox runs fn on the session's cached handle, attaching when none
// is cached. When a cached handle answers sandbox.ErrNotFound (the sandbox
// was reaped or rebuilt elsewhere) it is dropped and, if retry allows,
// fn runs once more on a fresh handle.
func (s *Service) withSandbox(ctx context.Context, sid domain.ID, retry func() bool, fn func(ports.Sandbox) error) error {
	if sb := s.handles.get(sid); sb != nil {
		err := fn(sb)
		if !errors.Is(err, sandbox.ErrNotFound) {
			return err
		}
		s.handles.drop(sid, sb)
		if !retry() {
			return err
		}
	}
	sb, err := s.provider.Attach(ctx, sid)
	if err != nil {
		return err
	}
	s.handles.put(sid, sb)
	return fn(sb)
}

// endOnClose ends a tracked call when its stream is closed.
type endOnClose struct {
	io.ReadCloser
	end func()
}

func (e *endOnClose) Close() error {
	defer e.end()
	return e.ReadCloser.Close()
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
