package telemetry

import (
	"context"
	"io"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/ports"
)

// Sandbox is a ports.Sandbox handed out by Provider: a span per operation
// with the session and sandbox ids, and the exec duration histogram.
type Sandbox struct {
	next ports.Sandbox
	p    *Provider
	sid  domain.ID
}

// ID implements ports.Sandbox.
func (s *Sandbox) ID() string { return s.next.ID() }

func (s *Sandbox) op(ctx context.Context, name string, f func(context.Context) error, attrs ...attribute.KeyValue) {
	attrs = append(attrs, attribute.String("sandgate.sandbox_id", s.next.ID()))
	ctx, span := s.p.start(ctx, "Sandbox."+name, s.sid, attrs...)
	err := f(ctx)
	s.p.end(ctx, span, name, s.sid, err)
}

// Exec implements ports.Sandbox. The span has the timeout, exit code and
// flags; never the command or its output.
func (s *Sandbox) Exec(ctx context.Context, req sandbox.ExecRequest) (res sandbox.ExecResult, err error) {
	s.op(ctx, "Exec", func(ctx context.Context) error {
		start := time.Now()
		res, err = s.next.Exec(ctx, req)
		outcome := "ok"
		switch {
		case err != nil:
			outcome = "error"
		case res.TimedOut:
			outcome = "timed_out"
		}
		s.p.execTime.Record(ctx, time.Since(start).Seconds(), metric.WithAttributes(attribute.String("outcome", outcome)))
		if err == nil {
			span := trace.SpanFromContext(ctx)
			span.SetAttributes(attribute.Int("sandgate.exec.exit_code", res.ExitCode),
				attribute.Bool("sandgate.exec.timed_out", res.TimedOut),
				attribute.Bool("sandgate.exec.truncated", res.Truncated))
		}
		return err
	}, attribute.Int64("sandgate.exec.timeout_ms", req.Timeout.Milliseconds()))
	return res, err
}

// ReadFile implements ports.Sandbox.
func (s *Sandbox) ReadFile(ctx context.Context, path string) (data []byte, err error) {
	s.op(ctx, "ReadFile", func(ctx context.Context) error {
		data, err = s.next.ReadFile(ctx, path)
		trace.SpanFromContext(ctx).SetAttributes(attribute.Int("sandgate.bytes", len(data)))
		return err
	})
	return data, err
}

// ReadFileStream implements ports.Sandbox. The span covers opening the
// stream, not reading it.
func (s *Sandbox) ReadFileStream(ctx context.Context, path string, maxBytes int64) (rc io.ReadCloser, n int64, err error) {
	s.op(ctx, "ReadFileStream", func(ctx context.Context) error {
		rc, n, err = s.next.ReadFileStream(ctx, path, maxBytes)
		trace.SpanFromContext(ctx).SetAttributes(attribute.Int64("sandgate.bytes", n))
		return err
	})
	return rc, n, err
}

// WriteFile implements ports.Sandbox.
func (s *Sandbox) WriteFile(ctx context.Context, path string, data []byte) (err error) {
	s.op(ctx, "WriteFile", func(ctx context.Context) error {
		err = s.next.WriteFile(ctx, path, data)
		return err
	}, attribute.Int("sandgate.bytes", len(data)))
	return err
}

// WriteFileStream implements ports.Sandbox.
func (s *Sandbox) WriteFileStream(ctx context.Context, path string, src io.Reader, size int64) (err error) {
	s.op(ctx, "WriteFileStream", func(ctx context.Context) error {
		err = s.next.WriteFileStream(ctx, path, src, size)
		return err
	}, attribute.Int64("sandgate.bytes", size))
	return err
}

// WriteFiles implements ports.Sandbox.
func (s *Sandbox) WriteFiles(ctx context.Context, files []sandbox.FileWrite) (err error) {
	var total int
	for _, f := range files {
		total += len(f.Data)
	}
	s.op(ctx, "WriteFiles", func(ctx context.Context) error {
		err = s.next.WriteFiles(ctx, files)
		return err
	}, attribute.Int("sandgate.files", len(files)), attribute.Int("sandgate.bytes", total))
	return err
}

// Destroy implements ports.Sandbox.
func (s *Sandbox) Destroy(ctx context.Context) (err error) {
	s.op(ctx, "Destroy", func(ctx context.Context) error {
		err = s.next.Destroy(ctx)
		return err
	})
	return err
}

// Stat implements ports.Sandbox.
func (s *Sandbox) Stat(ctx context.Context, path string) (fi sandbox.FileInfo, err error) {
	s.op(ctx, "Stat", func(ctx context.Context) error {
		fi, err = s.next.Stat(ctx, path)
		return err
	})
	return fi, err
}

// List implements ports.Sandbox. The span has the entry count, never a
// name.
func (s *Sandbox) List(ctx context.Context, path string) (infos []sandbox.FileInfo, err error) {
	s.op(ctx, "List", func(ctx context.Context) error {
		infos, err = s.next.List(ctx, path)
		trace.SpanFromContext(ctx).SetAttributes(attribute.Int("sandgate.files", len(infos)))
		return err
	})
	return infos, err
}

// Remove implements ports.Sandbox.
func (s *Sandbox) Remove(ctx context.Context, path string, recursive bool) (err error) {
	s.op(ctx, "Remove", func(ctx context.Context) error {
		err = s.next.Remove(ctx, path, recursive)
		return err
	}, attribute.Bool("sandgate.recursive", recursive))
	return err
}

// Mkdir implements ports.Sandbox.
func (s *Sandbox) Mkdir(ctx context.Context, path string, parents bool) (err error) {
	s.op(ctx, "Mkdir", func(ctx context.Context) error {
		err = s.next.Mkdir(ctx, path, parents)
		return err
	}, attribute.Bool("sandgate.parents", parents))
	return err
}
