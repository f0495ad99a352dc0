package sandbox

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
)

// A large body can travel by a backend's archive endpoint (Docker's) instead
// of a stream in the sandbox: those endpoints move tar archives of one
// member, which these two helpers write and read with the same checks on
// every path that uses them.

// WriteOneArchive writes a one-member archive, name its member, of exactly
// size bytes from src. A source that is short, long or failing aborts the
// archive (ErrSizeMismatch for a wrong length), so the upload fails instead
// of landing a wrong length.
func WriteOneArchive(w io.Writer, name string, src io.Reader, size int64) error {
	tw := tar.NewWriter(w)
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: size, Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	n, err := io.Copy(tw, io.LimitReader(src, size))
	if err != nil {
		return fmt.Errorf("reading the source: %w", err)
	}
	if n < size {
		return fmt.Errorf("source ended after %d of %d bytes: %w", n, size, ErrSizeMismatch)
	}
	var one [1]byte
	if k, _ := io.ReadFull(src, one[:]); k > 0 {
		return fmt.Errorf("source is longer than %d bytes: %w", size, ErrSizeMismatch)
	}
	return tw.Close()
}

// OpenArchived answers the bytes of the first member of the archive rc of
// the file p, and their size. The archive endpoint reads as root, after the
// checks made as the sandbox's user: the file may have been swapped since,
// so the member's type and size are checked again here — a symlink,
// directory or device is ErrNotRegularFile (its target is never read), a
// member above maxBytes ErrFileTooLarge. rc is closed on error; the reader
// answered closes it, and a stream that ends inside the member is
// io.ErrUnexpectedEOF.
func OpenArchived(rc io.ReadCloser, p string, maxBytes int64) (io.ReadCloser, int64, error) {
	tr := tar.NewReader(rc)
	hdr, err := tr.Next()
	switch {
	case err != nil:
		err = fmt.Errorf("read %q: archive: %w", p, err)
	case hdr.Typeflag != tar.TypeReg:
		err = fmt.Errorf("read %q: %w", p, ErrNotRegularFile)
	case hdr.Size > maxBytes:
		err = fmt.Errorf("read %q: %d bytes: %w", p, hdr.Size, ErrFileTooLarge)
	}
	if err != nil {
		_ = rc.Close()
		return nil, 0, err
	}
	return &archivedFile{r: tr, c: rc, left: hdr.Size}, hdr.Size, nil
}

// archivedFile is one member's bytes from an archive stream: exactly its
// size, a short stream being io.ErrUnexpectedEOF.
type archivedFile struct {
	r    io.Reader
	c    io.Closer
	left int64
}

func (a *archivedFile) Read(p []byte) (int, error) {
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

func (a *archivedFile) Close() error { return a.c.Close() }
