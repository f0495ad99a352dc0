package agentwire

import (
	"errors"
	"fmt"

	"github.com/sandgate/sandgate/core/sandbox"
)

// Error is the body of every non-2xx answer of the agent.
type Error struct {
	// Code is one of the codes below; an unknown one reads as CodeInternal.
	Code    string `json:"code"`
	Message string `json:"message"`
	// Path is the path that failed (the member of a PathFiles batch).
	Path string `json:"path,omitempty"`
	// Reason is the strerror of a CodeNotWritable failure.
	Reason string `json:"reason,omitempty"`
}

// Error codes: one per core/sandbox path sentinel, plus the request's own
// faults.
const (
	CodeFileNotExist   = "file_not_exist"
	CodeIsDirectory    = "is_directory"
	CodeNotDirectory   = "not_directory"
	CodeNotRegularFile = "not_regular_file"
	CodeNotReplaceable = "not_replaceable"
	CodeNotWritable    = "not_writable"
	CodeNotReadable    = "not_readable"
	CodeFileTooLarge   = "file_too_large"
	CodeSizeMismatch   = "size_mismatch"
	// CodeShortDelivery: a PathFiles tar ended early or is not a tar of
	// regular files with valid paths; nothing of the batch landed.
	CodeShortDelivery = "short_delivery"
	CodeInvalid       = "invalid_argument"
	CodeInternal      = "internal"
)

// sentinels maps codes to core/sandbox's sentinels both ways, in the order
// CodeOf tries them.
var sentinels = []struct {
	code string
	err  error
}{
	{CodeFileNotExist, sandbox.ErrFileNotExist},
	{CodeIsDirectory, sandbox.ErrIsDirectory},
	{CodeNotDirectory, sandbox.ErrNotDirectory},
	{CodeNotRegularFile, sandbox.ErrNotRegularFile},
	{CodeNotReplaceable, sandbox.ErrNotReplaceable},
	{CodeNotWritable, sandbox.ErrNotWritable},
	{CodeNotReadable, sandbox.ErrNotReadable},
	{CodeFileTooLarge, sandbox.ErrFileTooLarge},
	{CodeSizeMismatch, sandbox.ErrSizeMismatch},
	{CodeShortDelivery, sandbox.ErrShortDelivery},
	{CodeProcNotFound, sandbox.ErrProcNotFound},
	{CodeTooManyProcs, sandbox.ErrTooManyProcs},
	{CodeProcExited, sandbox.ErrProcExited},
	{CodeStdinClosed, sandbox.ErrStdinClosed},
	{CodeConnectionRefused, sandbox.ErrPortClosed},
}

// CodeOf classifies err for the wire: the code of the first sentinel it
// matches, else CodeInternal.
func CodeOf(err error) string {
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			return s.code
		}
	}
	return CodeInternal
}

// Err turns an Error document back into an error that matches its
// sentinel (a *sandbox.PathNotWritableError for CodeNotWritable), so a
// provider answers exactly what the fallback path answers: a not-readable
// error carries its Reason after the sentinel, as ClassifyRead's does.
func (e Error) Err() error {
	if e.Code == CodeNotWritable {
		return &sandbox.PathNotWritableError{Path: e.Path, Reason: e.Reason}
	}
	for _, s := range sentinels {
		if s.code != e.Code {
			continue
		}
		if e.Code == CodeNotReadable && e.Reason != "" {
			return fmt.Errorf("%s: %w: %s", e.Path, s.err, e.Reason)
		}
		if e.Path != "" {
			return fmt.Errorf("%s: %w", e.Path, s.err)
		}
		return s.err
	}
	return &CodeError{Code: e.Code, Message: e.Message}
}

// CodeError is an Error document whose code has no sentinel
// (invalid_argument, internal, an unknown one), for a caller that tells
// them apart with errors.As.
type CodeError struct{ Code, Message string }

func (e *CodeError) Error() string { return fmt.Sprintf("agent: %s: %s", e.Code, e.Message) }
