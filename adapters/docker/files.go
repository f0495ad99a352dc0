package docker

import (
	"bytes"
	"context"
	"fmt"
	"io"

	"github.com/sandgate/sandgate/adapters/internal/agentclient"
	"github.com/sandgate/sandgate/core/sandbox"
)

// WriteFile on the fallback path: one exec of the core's write script
// with the bytes on stdin (C-WRITE-*).
func (s scripts) WriteFile(ctx context.Context, path string, data []byte) error {
	return s.WriteFileStream(ctx, path, bytes.NewReader(data), int64(len(data)))
}

// stageAbove is the body size from which a write travels by archive PUT
// between two execs instead of on one exec's stdin: the daemon's exec stdin
// moves a few tens of MB/s, its archive endpoint several times that, and
// below this size the extra round trip costs more than it saves.
const stageAbove = 4 << 20

// WriteFileStream on the fallback path (C-STREAM-1), never buffering the
// payload. Small bodies ride one exec's stdin and the script judges the
// length: it is offered at most size+1 bytes, so a long source is seen as
// long without reading all of it. Large ones are staged (writeStaged).
func (s scripts) WriteFileStream(ctx context.Context, path string, src io.Reader, size int64) error {
	if size > stageAbove {
		return s.writeStaged(ctx, path, src, size)
	}
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

// writeStaged writes a large body: an exec creates the temporary file beside
// the target as the sandbox's user (answering every path fault before a byte
// travels), an archive PUT fills it, and a second exec checks the length and
// lands it. A PUT that fails — a short or long source, or the caller's
// cancellation, ends the archive (agentclient.PutStaged) — is followed by an
// exec that removes the temporary file.
func (s *handle) writeStaged(ctx context.Context, target string, src io.Reader, size int64) error {
	prepare, land, discard, err := sandbox.StageArgs(target, size)
	if err != nil {
		return err
	}
	if err := s.runClassified(ctx, target, prepare); err != nil {
		return err
	}
	tmp := prepare[len(prepare)-1]
	if err := agentclient.PutStaged(ctx, engineArchive{s}, tmp, src, size); err != nil {
		cleanup, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.p.opts.RemoveTimeout)
		defer cancel()
		_, _, _ = s.runScript(cleanup, discard, nil, nil)
		return fmt.Errorf("write %q: %w", target, err)
	}
	return s.runClassified(ctx, target, land)
}

// runClassified runs one write-side script and classifies its outcome.
func (s *handle) runClassified(ctx context.Context, target string, argv []string) error {
	code, stderr, err := s.runScript(ctx, argv, nil, nil)
	if err != nil {
		return fmt.Errorf("write %q: %w", target, err)
	}
	return sandbox.ClassifyWrite(target, code, stderr)
}

// ReadFile on the fallback path (C-READ-1): one exec whose stdout is
// the size header and the bytes, at most MaxFileBytes.
func (s scripts) ReadFile(ctx context.Context, path string) ([]byte, error) {
	argv, err := sandbox.ReadArgs(path, sandbox.MaxFileBytes)
	if err != nil {
		return nil, err
	}
	// Capped: whatever the sandbox prints, memory stays at the read cap.
	out := sandbox.NewCapture(sandbox.MaxFileBytes + 32)
	code, stderr, err := s.runScript(ctx, argv, nil, out)
	if err != nil {
		return nil, fmt.Errorf("read %q: %w", path, err)
	}
	if code != 0 {
		return nil, sandbox.ClassifyRead(path, code, stderr)
	}
	return sandbox.DecodeRead(path, out.Bytes())
}

// ReadFileStream on the fallback path (C-READ-2): an exec of the read
// script answers the path's faults and its size without sending it, then
// the bytes come through the archive endpoint, several times faster than an
// exec's stdout, and stream straight through: memory stays bounded whatever
// the size. ReadFile, capped at 4 MiB, keeps the one-exec path.
func (s scripts) ReadFileStream(ctx context.Context, path string, maxBytes int64) (io.ReadCloser, int64, error) {
	argv, err := sandbox.ReadStatArgs(path, maxBytes)
	if err != nil {
		return nil, 0, err
	}
	var out bytes.Buffer
	code, stderr, err := s.runScript(ctx, argv, nil, &out)
	if err != nil {
		return nil, 0, fmt.Errorf("read %q: %w", path, err)
	}
	if code != 0 {
		return nil, 0, sandbox.ClassifyRead(path, code, stderr)
	}
	if _, err := sandbox.ParseReadHeader(&out, maxBytes); err != nil {
		return nil, 0, fmt.Errorf("read %q: %w", path, err)
	}
	rc, err := s.getArchive(ctx, path)
	if err != nil {
		return nil, 0, err
	}
	return sandbox.OpenArchived(rc, path, maxBytes)
}
