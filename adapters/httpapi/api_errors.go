package httpapi

import (
	"errors"
	"net/http"

	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/core/session"
	"github.com/sandgate/sandgate/ports"
)

// Error codes of the executor API (docs/DESIGN.md), beside the ones above.
const (
	CodeSpecMismatch   = "spec_mismatch"
	CodeFileNotExist   = "file_not_exist"
	CodeIsDirectory    = "is_directory"
	CodeNotDirectory   = "not_directory"
	CodeNotRegularFile = "not_regular_file"
	CodeNotReplaceable = "not_replaceable"
	CodeNotWritable    = "not_writable"
	CodeFileTooLarge   = "file_too_large"
	CodeNotReadable    = "not_readable"
	// CodeImageUnavailable: PUT's image reference is invalid, or the image
	// is not present and cannot be pulled (the backend's reason follows).
	CodeImageUnavailable = "image_unavailable"
	// CodeImageUnusable: the image has no /bin/bash, or its sandbox exited
	// as it started; nothing was left behind.
	CodeImageUnusable = "image_unusable"
	// CodeGateUIDImage: a limited (gated) session's image runs as the gate
	// uid, which the firewall would let out unfiltered (B-2).
	CodeGateUIDImage = "gate_uid_image"
	// CodeInvalidWorkdir: the workdir exists in the image as a file.
	CodeInvalidWorkdir  = "invalid_workdir"
	CodeInvalidArgument = "invalid_argument"
	CodeLengthRequired  = "length_required"
	CodeNotImplemented  = "not_implemented"
	// CodeCheckpointTooLarge: DELETE ?checkpoint=true found the workdir over
	// SANDGATE_CHECKPOINT_MAX_BYTES; the session was left running.
	CodeCheckpointTooLarge = "checkpoint_too_large"
	// CodeCheckpointUnreadable: PUT found the session's stored checkpoint
	// unreadable; nothing was created or removed and the checkpoint is kept
	// (DELETE the session to discard it).
	CodeCheckpointUnreadable = "checkpoint_unreadable"
	// CodeNoAgent: the session's sandbox has no in-sandbox agent, which
	// procs and port forwarding need.
	CodeNoAgent = "no_agent"
	// The procs' codes: an unknown proc id; MaxRunningProcs running; a
	// signal to a proc that has exited; stdin closed.
	CodeProcNotFound = "proc_not_found"
	CodeTooManyProcs = "too_many_procs"
	CodeProcExited   = "proc_exited"
	CodeStdinClosed  = "stdin_closed"
	// CodePortClosed: nothing listens on the forwarded port in the sandbox.
	CodePortClosed = "port_closed"
	// CodeIsolationUnavailable: the session asks for an isolation (gVisor)
	// the backend has no runtime for, or cannot give with the rest of the
	// request.
	CodeIsolationUnavailable = "isolation_unavailable"
)

var (
	// ErrUnauthorized is what the client returns for 401 "unauthorized": the
	// API token is missing or wrong.
	ErrUnauthorized = errors.New("unauthorized: a valid API token is required")
	// errTooLarge classifies a request body over one of the handler's limits.
	errTooLarge = errors.New("request too large")
)

// apiError is one row of the mapping between a sentinel and the wire: the
// handler answers the first row whose sentinel the error matches, and the
// client's APIError matches every sentinel of its code's rows, so
// errors.Is works across the wire.
type apiError struct {
	sentinel error
	status   int
	code     string
	// serverOnly rows classify on the server but are not what the client's
	// error matches: the code is shared with a broader sentinel.
	serverOnly bool
}

// apiErrors is ordered: a path sentinel before invalid_argument (a batch
// member's failure can carry both), not_found for either store.
var apiErrors = []apiError{
	// A failed body is the cause of whatever the service made of it.
	{ErrIncompleteBody, http.StatusBadRequest, CodeIncompleteBody, false},
	{ErrBodyTimeout, http.StatusRequestTimeout, CodeRequestTimeout, false},
	{ErrBusy, http.StatusServiceUnavailable, CodeBusy, false},
	{sandbox.ErrNotFound, http.StatusNotFound, CodeNotFound, false},
	{session.ErrNotFound, http.StatusNotFound, CodeNotFound, false},
	{sandbox.ErrSpecMismatch, http.StatusConflict, CodeSpecMismatch, false},
	{sandbox.ErrFileNotExist, http.StatusNotFound, CodeFileNotExist, false},
	{sandbox.ErrIsDirectory, http.StatusUnprocessableEntity, CodeIsDirectory, false},
	{sandbox.ErrNotDirectory, http.StatusUnprocessableEntity, CodeNotDirectory, false},
	{sandbox.ErrNotRegularFile, http.StatusUnprocessableEntity, CodeNotRegularFile, false},
	{sandbox.ErrNotReplaceable, http.StatusUnprocessableEntity, CodeNotReplaceable, false},
	{sandbox.ErrNotWritable, http.StatusUnprocessableEntity, CodeNotWritable, false},
	{sandbox.ErrNotReadable, http.StatusUnprocessableEntity, CodeNotReadable, false},
	{sandbox.ErrFileTooLarge, http.StatusRequestEntityTooLarge, CodeFileTooLarge, false},
	{sandbox.ErrImageUnavailable, http.StatusUnprocessableEntity, CodeImageUnavailable, false},
	{sandbox.ErrImageUnusable, http.StatusUnprocessableEntity, CodeImageUnusable, false},
	{sandbox.ErrGateUIDImage, http.StatusUnprocessableEntity, CodeGateUIDImage, false},
	{sandbox.ErrInvalidWorkdir, http.StatusUnprocessableEntity, CodeInvalidWorkdir, false},
	{sandbox.ErrIsolationUnavailable, http.StatusUnprocessableEntity, CodeIsolationUnavailable, false},
	{sandbox.ErrNoAgent, http.StatusNotImplemented, CodeNoAgent, false},
	{sandbox.ErrProcNotFound, http.StatusNotFound, CodeProcNotFound, false},
	{sandbox.ErrTooManyProcs, http.StatusTooManyRequests, CodeTooManyProcs, false},
	{sandbox.ErrProcExited, http.StatusConflict, CodeProcExited, false},
	{sandbox.ErrStdinClosed, http.StatusConflict, CodeStdinClosed, false},
	{sandbox.ErrInvalidProc, http.StatusBadRequest, CodeInvalidArgument, true},
	{sandbox.ErrPortClosed, http.StatusBadGateway, CodePortClosed, false},
	{ErrTooManyStreams, http.StatusTooManyRequests, CodeTooManyStreams, false},
	{errNoSigning, http.StatusNotImplemented, CodeNotImplemented, true},
	{errTooLarge, http.StatusRequestEntityTooLarge, CodeFileTooLarge, true},
	{session.ErrInvalidRequest, http.StatusBadRequest, CodeInvalidArgument, false},
	{sandbox.ErrInvalidExec, http.StatusBadRequest, CodeInvalidArgument, true},
	{sandbox.ErrSizeNotALength, http.StatusLengthRequired, CodeLengthRequired, false},
	{sandbox.ErrSizeMismatch, http.StatusBadRequest, CodeInvalidArgument, true},
	{ports.ErrNotImplemented, http.StatusNotImplemented, CodeNotImplemented, false},
	{ports.ErrCheckpointTooLarge, http.StatusRequestEntityTooLarge, CodeCheckpointTooLarge, false},
	{ports.ErrBadCheckpoint, http.StatusConflict, CodeCheckpointUnreadable, false},
	{ErrUnauthorized, http.StatusUnauthorized, CodeUnauthorized, false},
}

// maxMessage bounds an error message on the wire.
const maxMessage = 1024

// classify returns the status, code and message to answer err with. An
// error no sentinel matches is 500 "internal" with a fixed message: its text
// is the backend's and stays in the log.
func classify(err error) (status int, code, message string) {
	for _, e := range apiErrors {
		if errors.Is(err, e.sentinel) {
			msg := err.Error()
			if len(msg) > maxMessage {
				msg = msg[:maxMessage] + "…"
			}
			return e.status, e.code, msg
		}
	}
	return http.StatusInternalServerError, CodeInternal, "internal error"
}

// APIError is an error answer of the API as the client sees it. errors.Is
// matches the sentinels its code stands for (sandbox.ErrNotFound for
// "not_found", session.ErrInvalidRequest for "invalid_argument", …).
type APIError struct {
	Status  int
	Code    string
	Message string
}

// Error implements error.
func (e *APIError) Error() string {
	return e.Code + ": " + e.Message
}

// Is matches every sentinel of the error's code.
func (e *APIError) Is(target error) bool {
	for _, r := range apiErrors {
		if r.code == e.Code && !r.serverOnly && r.sentinel == target {
			return true
		}
	}
	return false
}
