package kubernetes

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
)

// streamExec is one exec whose stdout the caller reads as it arrives,
// through a pipe: memory stays bounded whatever the size, and the exec is
// throttled by the reader. The exec's outcome closes the pipe: a clean EOF
// only after the script exited 0 (the "trailer" that verifies the stream),
// an error otherwise, so a transfer that died mid-way never reads as a
// shorter whole. The exec's context is detached from the caller's (a stream
// outlives the call that opened it) and ends only with cancel: the callers
// tie it to their own context until the first byte (awaitFirst).
type streamExec struct {
	r      *bufio.Reader
	pr     *io.PipeReader
	ctx    context.Context // the exec's; done only after cancel
	cancel context.CancelFunc
	done   chan struct{}
	code   int
	stderr *sandbox.Capture
	err    error
}

// errExit carries a non-zero exit of a streamed script to the pipe's reader.
type errExit struct {
	code   int
	stderr string
}

func (e *errExit) Error() string {
	return fmt.Sprintf("exited %d: %s", e.code, strings.TrimSpace(e.stderr))
}

// startStream starts argv with stdout on a pipe.
func (s *handle) startStream(ctx context.Context, argv []string) *streamExec {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	pr, pw := io.Pipe()
	st := &streamExec{r: bufio.NewReaderSize(pr, 64<<10), pr: pr, ctx: ctx, cancel: cancel, done: make(chan struct{}),
		stderr: sandbox.NewCapture(64 << 10)}
	go func() {
		defer close(st.done)
		st.code, st.err = s.exec(ctx, argv, nil, pw, st.stderr)
		switch {
		case st.err != nil:
			pw.CloseWithError(st.err)
		case st.code != 0:
			pw.CloseWithError(&errExit{code: st.code, stderr: st.stderr.String()})
		default:
			_ = pw.Close()
		}
	}()
	return st
}

// awaitFirst runs first — the wait for the stream's first bytes — while
// ctx's end cancels the exec: until then nothing else would, and a sandbox
// that never answers (a FIFO swapped in for the file) would hold the call
// forever. Past it, the stream is the reader's, ended by Close.
func (st *streamExec) awaitFirst(ctx context.Context, first func() error) error {
	stop := context.AfterFunc(ctx, st.cancel)
	defer stop()
	return first()
}

// canceledByUs reports whether the exec's error is only the cancellation
// of its own context (by Close, or by the caller's context through
// awaitFirst) rather than something the exec or the transport said.
func (st *streamExec) canceledByUs() bool {
	return st.ctx.Err() != nil && errors.Is(st.err, context.Canceled)
}

// Close stops the exec and waits for it to end.
func (st *streamExec) Close() error {
	st.cancel()
	_ = st.pr.Close()
	<-st.done
	return nil
}

// ReadFileStream on the fallback path (C-READ-2, B-6): the read script
// answers the path's faults and the size before any byte travels, then the
// bytes stream through — exactly the announced count, verified by the
// script's exit status at the end, with memory bounded by the pipe.
func (s scripts) ReadFileStream(ctx context.Context, p string, maxBytes int64) (io.ReadCloser, int64, error) {
	argv, err := sandbox.ReadArgs(p, maxBytes)
	if err != nil {
		return nil, 0, err
	}
	st := s.startStream(ctx, argv)
	var n int64
	err = st.awaitFirst(ctx, func() (err error) {
		n, err = sandbox.ParseReadHeader(st.r, maxBytes)
		return err
	})
	if err != nil {
		_ = st.Close()
		return nil, 0, s.streamErr(ctx, st, fmt.Sprintf("read %q", p), func(e *errExit) error {
			return sandbox.ClassifyRead(p, e.code, e.stderr)
		}, err)
	}
	return &fileStream{st: st, left: n, path: p}, n, nil
}

// streamErr turns a stream that failed before its first useful byte (err;
// st already closed) into the caller's cancellation, the exec's own error,
// the sentinel its exit code means (classify), or err itself — which wins
// over the "context canceled" of the exec that closing st stopped (a
// header above maxBytes is ErrFileTooLarge, not a cancellation).
func (s *handle) streamErr(ctx context.Context, st *streamExec, op string, classify func(*errExit) error, err error) error {
	var exit *errExit
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("%s: kubernetes exec: %w", op, ctx.Err())
	case st.err != nil && !st.canceledByUs():
		return fmt.Errorf("%s: %w", op, s.execErr(ctx, st.err))
	case errors.As(err, &exit):
		return classify(exit)
	case st.code != 0:
		return classify(&errExit{code: st.code, stderr: st.stderr.String()})
	}
	return fmt.Errorf("%s: %w", op, err)
}

// fileStream is the file's bytes from a read exec: exactly left bytes, then
// EOF only once the script exited 0.
type fileStream struct {
	st   *streamExec
	left int64
	path string
}

func (f *fileStream) Read(p []byte) (int, error) {
	if f.left <= 0 {
		return 0, f.trailer()
	}
	if int64(len(p)) > f.left {
		p = p[:f.left]
	}
	n, err := f.st.r.Read(p)
	f.left -= int64(n)
	if errors.Is(err, io.EOF) && f.left > 0 {
		err = fmt.Errorf("read %q: stream ended %d bytes short: %w", f.path, f.left, io.ErrUnexpectedEOF)
	}
	return n, err
}

// trailer verifies the end of the stream: nothing after the announced
// bytes, and the script's exit 0.
func (f *fileStream) trailer() error {
	var one [1]byte
	k, err := f.st.r.Read(one[:])
	for k == 0 && err == nil {
		k, err = f.st.r.Read(one[:])
	}
	switch {
	case k > 0:
		return fmt.Errorf("read %q: more bytes than announced", f.path)
	case errors.Is(err, io.EOF):
		return io.EOF
	}
	return fmt.Errorf("read %q: %w", f.path, err)
}

func (f *fileStream) Close() error { return f.st.Close() }

// exportScript streams ROOT as a tar whose members all live under its base
// name (as Docker's archive endpoint does), symlinks as symlinks — a
// dangling root exports the link itself. A missing root is exit 80
// (ExitFileNotExist), before any byte.
const exportScript = `cd -- "$1" 2>/dev/null || exit 80
[ -e "$2" ] || [ -L "$2" ] || exit 80
exec tar -cf - -- "$2"`

// Export implements ports.Provider by tar over exec; the pod must be ready
// (C-EXP-1, C-EXP-2). The stream ends in an error, never a clean EOF, when
// the tar or the transfer fails part way.
func (p *Provider) Export(ctx context.Context, sid domain.ID, root string) (io.ReadCloser, error) {
	if err := sid.Required(); err != nil {
		return nil, fmt.Errorf("export: session_id: %w", err)
	}
	if !strings.HasPrefix(root, "/") || path.Clean(root) != root || root == "/" || strings.IndexByte(root, 0) >= 0 {
		return nil, fmt.Errorf("export root %q: must be an absolute, clean path other than /", root)
	}
	pod, err := p.getOwned(ctx, sid)
	if err != nil {
		return nil, err
	}
	if !ready(pod) {
		return nil, fmt.Errorf("export %s: sandbox pod is not running: %w", sid, sandbox.ErrNotFound)
	}
	h := p.handle(pod, "")
	st := h.startStream(ctx, []string{"/bin/bash", "-c", exportScript, "sandgate-export", path.Dir(root), path.Base(root)})
	if err := st.awaitFirst(ctx, func() error { _, err := st.r.Peek(1); return err }); err != nil {
		_ = st.Close()
		return nil, h.streamErr(ctx, st, fmt.Sprintf("export %s %q", sid, root), func(e *errExit) error {
			if e.code == sandbox.ExitFileNotExist {
				return fmt.Errorf("export %s %q: %w", sid, root, sandbox.ErrFileNotExist)
			}
			return fmt.Errorf("export %s %q: %w", sid, root, e)
		}, err)
	}
	return sandbox.NewTarGuard(struct {
		io.Reader
		io.Closer
	}{st.r, st}), nil
}
