package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	pathpkg "path"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"

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
// lands it. A PUT that fails — a short or long source ends the archive early
// — is followed by an exec that removes the temporary file.
func (s *handle) writeStaged(ctx context.Context, target string, src io.Reader, size int64) error {
	prepare, land, discard, err := sandbox.StageArgs(target, size)
	if err != nil {
		return err
	}
	if err := s.runClassified(ctx, target, prepare); err != nil {
		return err
	}
	tmp := prepare[len(prepare)-1]
	body := producer(func(w io.Writer) error { return tarOne(w, pathpkg.Base(tmp), src, size) })
	defer func() { _ = body.Close() }()
	err = s.p.eng.CopyToContainer(ctx, s.id, pathpkg.Dir(tmp), body, container.CopyToContainerOptions{CopyUIDGID: true})
	if err != nil {
		cleanup, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.p.opts.RemoveTimeout)
		defer cancel()
		_, _, _ = s.runScript(cleanup, discard, nil, nil)
		return fmt.Errorf("write %q: %w", target, translate(err, "archive upload"))
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

// tarOne writes a one-member archive of exactly size bytes from src. A
// source that is short, long or failing aborts the archive, so the upload
// fails instead of landing a wrong length.
func tarOne(w io.Writer, name string, src io.Reader, size int64) error {
	tw := tar.NewWriter(w)
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: size, Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	n, err := io.Copy(tw, io.LimitReader(src, size))
	if err != nil {
		return fmt.Errorf("reading the source: %w", err)
	}
	if n < size {
		return fmt.Errorf("source ended after %d of %d bytes: %w", n, size, sandbox.ErrSizeMismatch)
	}
	var one [1]byte
	if k, _ := io.ReadFull(src, one[:]); k > 0 {
		return fmt.Errorf("source is longer than %d bytes: %w", size, sandbox.ErrSizeMismatch)
	}
	return tw.Close()
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
	rc, _, err := s.p.eng.CopyFromContainer(ctx, s.id, path)
	if err != nil {
		// The script just saw a regular file: a miss now is a race with the
		// sandbox — gone itself, or the file gone — answered as what it found.
		if cerrdefs.IsNotFound(err) && s.vanished(ctx) {
			return nil, 0, fmt.Errorf("read %q: %w", path, errGone)
		}
		if cerrdefs.IsNotFound(err) {
			return nil, 0, fmt.Errorf("read %q: %w", path, sandbox.ErrFileNotExist)
		}
		return nil, 0, translate(err, "archive read")
	}
	tr := tar.NewReader(rc)
	hdr, err := tr.Next()
	if err != nil {
		_ = rc.Close()
		return nil, 0, fmt.Errorf("read %q: archive: %w", path, err)
	}
	// The archive's header is the size of the bytes that follow; the file may
	// have changed since the script looked, so its type and cap are checked
	// again here.
	switch {
	case hdr.Typeflag != tar.TypeReg:
		_ = rc.Close()
		return nil, 0, fmt.Errorf("read %q: %w", path, sandbox.ErrNotRegularFile)
	case hdr.Size > maxBytes:
		_ = rc.Close()
		return nil, 0, fmt.Errorf("read %q: %d bytes: %w", path, hdr.Size, sandbox.ErrFileTooLarge)
	}
	return &archiveFile{r: tr, c: rc, left: hdr.Size}, hdr.Size, nil
}

// archiveFile is one member's bytes from an archive stream: exactly its
// size, a short stream being io.ErrUnexpectedEOF.
type archiveFile struct {
	r    io.Reader
	c    io.Closer
	left int64
}

func (a *archiveFile) Read(p []byte) (int, error) {
	if a.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > a.left {
		p = p[:a.left]
	}
	n, err := a.r.Read(p)
	a.left -= int64(n)
	if errors.Is(err, io.EOF) && a.left > 0 {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

func (a *archiveFile) Close() error { return a.c.Close() }
