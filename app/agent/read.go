package agent

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"strconv"
	"syscall"

	"github.com/sandgate/sandgate/core/agentwire"
	"github.com/sandgate/sandgate/core/sandbox"
)

// checkFilePath is core/sandbox's CheckFilePath, its unclassified refusals
// marked invalid ("/" stays ErrIsDirectory, what the sandbox would answer).
func checkFilePath(p string) error {
	err := sandbox.CheckFilePath(p)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, sandbox.ErrIsDirectory):
		return fault(p, sandbox.ErrIsDirectory, "")
	}
	return fmt.Errorf("%w: %w", errInvalid, err)
}

// readFile serves PathFile's GET: read.sh's checks in read.sh's order, then
// the file's exact size as Content-Length and its bytes, streamed through a
// fixed buffer whatever the size.
func readFile(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Query().Get(agentwire.QueryPath)
	limit, err := maxParam(r)
	if err == nil {
		err = checkFilePath(p)
	}
	if err != nil {
		writeError(w, r, err)
		return
	}
	f, size, err := openRead(p, limit)
	if err != nil {
		writeError(w, r, err)
		return
	}
	defer func() { _ = f.Close() }()
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return // the checks and the size, without the bytes
	}
	if n, _ := io.CopyN(w, f, size); n < size {
		// The file shrank (or the caller left): the caller must see a short
		// body — an error — never bytes it was not announced.
		panic(http.ErrAbortHandler)
	}
}

// maxParam is the read's "max" (absent: sandbox.MaxFileBytes, ReadFile's
// cap).
func maxParam(r *http.Request) (int64, error) {
	q := r.URL.Query()
	if !q.Has(agentwire.QueryMax) {
		return sandbox.MaxFileBytes, nil
	}
	n, err := strconv.ParseInt(q.Get(agentwire.QueryMax), 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("max %q: not a length: %w", q.Get(agentwire.QueryMax), errInvalid)
	}
	return n, nil
}

// openRead opens p for a read of at most limit bytes, in read.sh's order: a
// non-directory in the parent chain; a missing path (a dangling symlink is
// a symlink); a directory or a symlink to one; any other symlink, never
// followed; a FIFO, socket or device; a file the user cannot open (the
// kernel's strerror); a file above limit, before any byte. The size comes
// from the open file, so a file growing meanwhile never sends more than
// announced.
func openRead(p string, limit int64) (*os.File, int64, error) {
	if err := checkParent(p); err != nil {
		return nil, 0, err
	}
	fi, err := os.Lstat(p)
	if err != nil {
		return nil, 0, lstatFault(p, err)
	}
	if err := checkNotDir(p); err != nil {
		return nil, 0, err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil, 0, fault(p, sandbox.ErrNotRegularFile, "symbolic link")
	}
	if !fi.Mode().IsRegular() {
		return nil, 0, fault(p, sandbox.ErrNotRegularFile, "")
	}
	// O_NOFOLLOW and O_NONBLOCK: a path swapped for a symlink or a FIFO since
	// the checks fails or returns at once, and fstat below refuses it.
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, 0, openFault(p, err)
	}
	fi, err = f.Stat()
	switch {
	case err != nil:
		err = fmt.Errorf("read %s: %w", p, err)
	case !fi.Mode().IsRegular():
		err = fault(p, sandbox.ErrNotRegularFile, "")
	case fi.Size() > limit:
		err = fault(p, sandbox.ErrFileTooLarge, fmt.Sprintf("%d bytes, above %d", fi.Size(), limit))
	}
	if err != nil {
		_ = f.Close()
		return nil, 0, err
	}
	return f, fi.Size(), nil
}

// lstatFault classifies a failed lstat of p.
func lstatFault(p string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fault(p, sandbox.ErrFileNotExist, "")
	case errors.Is(err, syscall.ENOTDIR):
		return fault(p, sandbox.ErrNotDirectory, "")
	case errors.Is(err, fs.ErrPermission):
		// A parent the user cannot search: the script's tests answered "no
		// such file"; the kernel's reason is the truer answer.
		return fault(p, sandbox.ErrNotReadable, strerror(err))
	}
	return fmt.Errorf("lstat %s: %w", p, err)
}

// openFault classifies a failed open of p for reading.
func openFault(p string, err error) error {
	switch {
	case errors.Is(err, syscall.ELOOP):
		return fault(p, sandbox.ErrNotRegularFile, "symbolic link")
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return lstatFault(p, err)
	}
	return fault(p, sandbox.ErrNotReadable, strerror(err))
}
