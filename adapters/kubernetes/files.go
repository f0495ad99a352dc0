package kubernetes

import (
	"bytes"
	"context"
	"fmt"
	"io"

	"github.com/sandgate/sandgate/core/sandbox"
)

// WriteFile on the fallback path: one exec of the core's write script
// with the bytes on stdin (C-WRITE-*).
func (s scripts) WriteFile(ctx context.Context, path string, data []byte) error {
	return s.WriteFileStream(ctx, path, bytes.NewReader(data), int64(len(data)))
}

// WriteFileStream on the fallback path (C-STREAM-1), never buffering the
// payload: the body streams on the exec's stdin, offered at most size+1
// bytes so the script sees a long source as long, and the script judges the
// length. A script that refuses the path drains what is still offered, so a
// refused body never blocks its sender. A zero-byte write opens no stdin at
// all.
func (s scripts) WriteFileStream(ctx context.Context, path string, src io.Reader, size int64) error {
	argv, err := sandbox.WriteArgs(path, size)
	if err != nil {
		return err
	}
	var stdin io.Reader
	if size > 0 {
		stdin = io.LimitReader(src, size+1)
	} else if n, _ := io.ReadFull(src, make([]byte, 1)); n > 0 {
		return fmt.Errorf("write %q: source is longer than 0 bytes: %w", path, sandbox.ErrSizeMismatch)
	}
	code, stderr, err := s.run(ctx, argv, stdin, nil)
	if err != nil {
		return fmt.Errorf("write %q: %w", path, err)
	}
	return sandbox.ClassifyWrite(path, code, stderr)
}

// WriteFiles on the fallback path (C-BULK-1..3) in one exec whatever the
// member count: the core's one-shot script with the batch's archive on stdin.
func (s scripts) WriteFiles(ctx context.Context, files []sandbox.FileWrite) error {
	if len(files) == 0 {
		return nil
	}
	plan, err := sandbox.PlanBulk(s.workdir, files)
	if err != nil {
		return err
	}
	body := producer(plan.WriteArchive)
	defer func() { _ = body.Close() }()
	code, stderr, err := s.run(ctx, plan.OneShotCmd(), body, nil)
	if err != nil {
		return fmt.Errorf("bulk write: %w", err)
	}
	return plan.Classify(code, stderr)
}

// producer turns a function that writes a stream into a reader of it,
// through a pipe, so an archive is never held whole in memory. Closing the
// reader stops the writer, whoever stopped reading first.
func producer(write func(io.Writer) error) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(write(pw)) }()
	return pr
}

// ReadFile on the fallback path (C-READ-1): one exec whose stdout is the
// size header and the bytes, at most MaxFileBytes.
func (s scripts) ReadFile(ctx context.Context, path string) ([]byte, error) {
	argv, err := sandbox.ReadArgs(path, sandbox.MaxFileBytes)
	if err != nil {
		return nil, err
	}
	// Capped: whatever the sandbox prints, memory stays at the read cap.
	out := sandbox.NewCapture(sandbox.MaxFileBytes + 32)
	code, stderr, err := s.run(ctx, argv, nil, out)
	if err != nil {
		return nil, fmt.Errorf("read %q: %w", path, err)
	}
	if code != 0 {
		return nil, sandbox.ClassifyRead(path, code, stderr)
	}
	return sandbox.DecodeRead(path, out.Bytes())
}
