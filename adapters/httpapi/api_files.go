package httpapi

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"strconv"
	"strings"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/core/session"
)

// tarOverhead bounds the archive bytes around one member's data: a header
// block, a PAX record for a long name (at most PATH_MAX) and the padding.
const tarOverhead = 6 << 10

func (a *api) readFile(w http.ResponseWriter, r *http.Request) {
	sid, err := sessionID(r)
	q := r.URL.Query()
	maxBytes := a.opts.MaxStreamBytes
	if v := q.Get("max_bytes"); err == nil && v != "" {
		n, perr := strconv.ParseInt(v, 10, 64)
		switch {
		case perr != nil || n <= 0:
			err = fmt.Errorf("%w: max_bytes: %q is not a positive integer", session.ErrInvalidRequest, domain.Clip(v))
		case n < maxBytes:
			maxBytes = n
		}
	}
	var (
		rc   io.ReadCloser
		size int64
	)
	if err == nil {
		rc, size, err = a.svc.ReadFile(r.Context(), sid, q.Get("path"), maxBytes)
	}
	if err != nil {
		a.fail(w, r, err)
		return
	}
	defer func() { _ = rc.Close() }()
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Length", strconv.FormatInt(size, 10))
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	// A stream shorter than Content-Length makes the server close the
	// connection, which the client reads as a broken transfer.
	a.copyOut(w, r, io.LimitReader(rc, size))
}

func (a *api) writeFile(w http.ResponseWriter, r *http.Request) {
	sid, err := sessionID(r)
	switch {
	case err != nil:
	case r.ContentLength < 0:
		// Checked before the body is read: with `Expect: 100-continue` the
		// client never sends it.
		err = fmt.Errorf("%w: a stream write needs a Content-Length", sandbox.ErrSizeNotALength)
	case r.ContentLength > a.opts.MaxStreamBytes:
		err = fmt.Errorf("%w: body: %d bytes, at most %d", errTooLarge, r.ContentLength, a.opts.MaxStreamBytes)
	default:
		err = a.svc.WriteFile(r.Context(), sid, r.URL.Query().Get("path"), r.Body, r.ContentLength)
	}
	a.done(w, r, err)
}

func (a *api) writeBatch(w http.ResponseWriter, r *http.Request) {
	sid, err := sessionID(r)
	var files []sandbox.FileWrite
	h := &hold{b: a.opts.BatchBudget}
	defer h.release() // the files' bytes are garbage once written
	if err == nil {
		files, err = a.readBatch(w, r, h)
	}
	if err == nil {
		err = a.svc.WriteFiles(r.Context(), sid, files)
	}
	a.done(w, r, err)
}

func (a *api) export(w http.ResponseWriter, r *http.Request) {
	sid, err := sessionID(r)
	var rc io.ReadCloser
	if err == nil {
		rc, err = a.svc.Export(r.Context(), sid, r.URL.Query().Get("root"))
	}
	if err != nil {
		a.fail(w, r, err)
		return
	}
	defer func() { _ = rc.Close() }()
	w.Header().Set("Content-Type", "application/x-tar")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	a.copyOut(w, r, rc)
}

// readBatch reads the tar body of files:batch into the batch to write,
// enforcing the count and byte limits as it reads — a member over them is
// refused from its header, before its data is read and before the sandbox
// is involved. A member's memory is allocated as its bytes arrive, never
// from what its header claims, and taken from h's budget. Regular files are members; directories are skipped (writes
// create parents); any other entry is refused.
//
// Without ?root= every name must be an absolute, clean path. With it every
// name is relative ("./" allowed), clean and free of "..", and lands under
// root — the shape `tar -C dir -cf - .` produces.
func (a *api) readBatch(w http.ResponseWriter, r *http.Request, h *hold) ([]sandbox.FileWrite, error) {
	root := r.URL.Query().Get("root")
	if root != "" {
		if err := session.CheckPath("root", root); err != nil && !errors.Is(err, sandbox.ErrIsDirectory) {
			return nil, err
		}
	}
	maxRaw := a.opts.MaxBatchBytes + int64(a.opts.MaxBatchFiles)*tarOverhead + 2*tarOverhead
	if r.ContentLength > maxRaw {
		return nil, fmt.Errorf("%w: body: %d bytes, at most %d", errTooLarge, r.ContentLength, maxRaw)
	}
	tr := tar.NewReader(http.MaxBytesReader(w, r.Body, maxRaw))
	var (
		files []sandbox.FileWrite
		total int64
	)
	for i := 0; ; i++ {
		hdr, err := tr.Next()
		if errors.Is(err, tar.ErrInsecurePath) {
			err = nil // the name is checked below, against the batch's own rule
		}
		switch {
		case errors.Is(err, io.EOF):
			return files, nil
		case err != nil:
			return nil, batchReadError(i, err)
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			continue
		case tar.TypeReg:
		default:
			return nil, fmt.Errorf("%w: entry %d %q: type %q is not a regular file or a directory", session.ErrInvalidRequest, i, domain.Clip(hdr.Name), string(hdr.Typeflag))
		}
		if hdr.Size < 0 {
			return nil, fmt.Errorf("%w: entry %d: negative size", session.ErrInvalidRequest, i)
		}
		if len(files) == a.opts.MaxBatchFiles {
			return nil, fmt.Errorf("%w: batch: more than %d files", errTooLarge, a.opts.MaxBatchFiles)
		}
		if total += hdr.Size; total > a.opts.MaxBatchBytes {
			return nil, fmt.Errorf("%w: batch: more than %d bytes of file data", errTooLarge, a.opts.MaxBatchBytes)
		}
		target, err := memberPath(root, hdr.Name, fmt.Sprintf("entry %d name", i))
		if err != nil {
			return nil, err
		}
		data, err := h.readMember(tr, hdr.Size)
		if err != nil {
			return nil, batchReadError(i, err)
		}
		files = append(files, sandbox.FileWrite{Path: target, Data: data})
	}
}

// batchReadError classifies a failure to read the archive: the body over
// its byte bound, or a malformed or truncated archive.
func batchReadError(i int, err error) error {
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return fmt.Errorf("%w: batch: the archive is larger than %d bytes", errTooLarge, tooBig.Limit)
	case errors.Is(err, ErrBusy), errors.Is(err, ErrBodyTimeout), errors.Is(err, ErrIncompleteBody):
		return fmt.Errorf("entry %d: %w", i, err)
	}
	return fmt.Errorf("%w: entry %d: not a readable tar archive: %w", session.ErrInvalidRequest, i, err)
}

// memberPath maps a member's name to its target under the batch's rule
// (readBatch); errors name field.
func memberPath(root, name, field string) (string, error) {
	if root == "" {
		if err := session.CheckPath(field, name); err != nil {
			return "", err
		}
		return name, nil
	}
	rel := strings.TrimPrefix(name, "./")
	if rel == "" || strings.HasPrefix(rel, "/") || path.Clean(rel) != rel || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", fmt.Errorf("%w: %s %q: must be a clean relative path inside root", session.ErrInvalidRequest, field, domain.Clip(name))
	}
	target := path.Join(root, rel)
	if err := session.CheckPath(field, target); err != nil {
		return "", err
	}
	return target, nil
}
