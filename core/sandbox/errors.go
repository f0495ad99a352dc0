package sandbox

import (
	"errors"
	"fmt"
)

// The sentinels classify every failure a caller branches on. Match them with
// errors.Is: adapters wrap them with context (%w) and PathNotWritableError
// matches ErrNotWritable.
var (
	// ErrNotFound: the session has no (running) sandbox, or the handle's
	// sandbox is gone.
	ErrNotFound = errors.New("sandbox not found")
	// ErrSpecMismatch: the session's existing sandbox differs from the
	// requested spec in a field adoption compares (image, workdir, network).
	ErrSpecMismatch = errors.New("sandbox spec mismatch")
	// ErrFileNotExist: the path (or an export root) does not exist.
	ErrFileNotExist = errors.New("file does not exist")
	// ErrIsDirectory: the path is a directory (or a symlink to one).
	ErrIsDirectory = errors.New("is a directory")
	// ErrNotDirectory: a component of the path's parent chain is not a
	// directory.
	ErrNotDirectory = errors.New("not a directory")
	// ErrNotRegularFile: the path is a FIFO, socket, device or symlink where a
	// regular file is required.
	ErrNotRegularFile = errors.New("not a regular file")
	// ErrNotReplaceable: the write target is a device node or a mount point,
	// which a rename cannot replace.
	ErrNotReplaceable = errors.New("target cannot be replaced")
	// ErrNotWritable: the temporary file or a parent directory cannot be
	// created. Usually carried by *PathNotWritableError.
	ErrNotWritable = errors.New("path not writable")
	// ErrFileTooLarge: the file exceeds the read cap (MaxFileBytes or the
	// caller's maxBytes).
	ErrFileTooLarge = errors.New("file too large")
	// ErrSizeNotALength: a stream write was given a negative size.
	ErrSizeNotALength = errors.New("size is not a length")
	// ErrNotReadable: the sandbox's user cannot open the file (its
	// permissions). Reads report the sandbox's strerror beside it.
	ErrNotReadable = errors.New("file not readable")

	// ErrImageUnavailable: the spec's image cannot be had — its reference is
	// not valid, or it is not present and cannot be pulled. The backend's
	// reason travels in the message; the caller cannot tell a typo from a
	// registry it cannot reach any better than the backend, so both are the
	// caller's to fix or retry.
	ErrImageUnavailable = errors.New("image unavailable")
	// ErrImageUnusable: the image is present but cannot run a sandbox — it
	// has no /bin/bash (every in-sandbox script and the keep-alive need it),
	// or the sandbox's main process exited as it started. Nothing created
	// for the attempt is left behind.
	ErrImageUnusable = errors.New("image unusable as a sandbox")
	// ErrInvalidWorkdir: the spec's workdir cannot be the sandbox's working
	// directory in this image (it exists there as a file).
	ErrInvalidWorkdir = errors.New("workdir unusable")
)

// PathNotWritableError reports a path the sandbox refused to create, with the
// sandbox's own strerror text (LC_ALL=C), e.g. "Read-only file system" or
// "Permission denied". It matches ErrNotWritable.
type PathNotWritableError struct {
	Path   string
	Reason string
}

// Error implements error.
func (e *PathNotWritableError) Error() string {
	if e.Reason == "" {
		return fmt.Sprintf("%s: %v", e.Path, ErrNotWritable)
	}
	return fmt.Sprintf("%s: %v: %s", e.Path, ErrNotWritable, e.Reason)
}

// Is makes errors.Is(err, ErrNotWritable) true.
func (e *PathNotWritableError) Is(target error) bool { return target == ErrNotWritable }
