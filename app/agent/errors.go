package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"syscall"

	"github.com/sandgate/sandgate/core/agentwire"
	"github.com/sandgate/sandgate/core/sandbox"
)

// errInvalid classifies a request the agent refuses before touching
// anything: a bad path, parameter or body shape (CodeInvalid, 400).
var errInvalid = errors.New("invalid request")

// errLengthRequired is errInvalid for a write without Content-Length: the
// agent cannot judge a body's length without one (CodeInvalid, 411).
var errLengthRequired = fmt.Errorf("Content-Length required: %w", errInvalid)

// statusOf is the HTTP status of each error code: 404 for a missing path,
// 409 for a path whose kind conflicts with the operation, 403 for what the
// sandbox's user may not do, 422 for a body or file whose size is wrong,
// 400 for the request's own faults, 500 for the rest; for procs, 404 for an
// unknown id, 429 for one too many, 409 for a proc past what is asked.
var statusOf = map[string]int{
	agentwire.CodeFileNotExist:      http.StatusNotFound,
	agentwire.CodeIsDirectory:       http.StatusConflict,
	agentwire.CodeNotDirectory:      http.StatusConflict,
	agentwire.CodeNotRegularFile:    http.StatusConflict,
	agentwire.CodeNotReplaceable:    http.StatusConflict,
	agentwire.CodeNotWritable:       http.StatusForbidden,
	agentwire.CodeNotReadable:       http.StatusForbidden,
	agentwire.CodeFileTooLarge:      http.StatusUnprocessableEntity,
	agentwire.CodeSizeMismatch:      http.StatusUnprocessableEntity,
	agentwire.CodeShortDelivery:     http.StatusUnprocessableEntity,
	agentwire.CodeProcNotFound:      http.StatusNotFound,
	agentwire.CodeTooManyProcs:      http.StatusTooManyRequests,
	agentwire.CodeProcExited:        http.StatusConflict,
	agentwire.CodeStdinClosed:       http.StatusConflict,
	agentwire.CodeInvalid:           http.StatusBadRequest,
	agentwire.CodeConnectionRefused: http.StatusBadGateway,
	agentwire.CodeInternal:          http.StatusInternalServerError,
}

// pathError is a classified failure about one path: sentinel is one of
// core/sandbox's, reason the strerror (not-writable, not-readable).
type pathError struct {
	path     string
	sentinel error
	reason   string
}

func (e *pathError) Error() string {
	if e.reason == "" {
		return fmt.Sprintf("%s: %v", e.path, e.sentinel)
	}
	return fmt.Sprintf("%s: %v: %s", e.path, e.sentinel, e.reason)
}

func (e *pathError) Unwrap() error { return e.sentinel }

// fault returns the classified failure of p.
func fault(p string, sentinel error, reason string) error {
	return &pathError{path: p, sentinel: sentinel, reason: reason}
}

// notWritable is the not-writable failure of p, reason the strerror of err
// ("Read-only file system", "Permission denied", "No space left on
// device"), as the scripts lift it out of a tool's message.
func notWritable(p string, err error) error {
	return fault(p, sandbox.ErrNotWritable, strerror(err))
}

// strerror is the C library's text of err's errno ("Read-only file
// system", as the scripts report it under LC_ALL=C), or err's own text when
// it carries none. Go's table is glibc's with the first letter lowered.
func strerror(err error) string {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return err.Error()
	}
	s := errno.Error()
	if s != "" && s[0] >= 'a' && s[0] <= 'z' {
		s = string(s[0]-'a'+'A') + s[1:]
	}
	return s
}

// wireError turns err into the document the agent answers.
func wireError(err error) agentwire.Error {
	doc := agentwire.Error{Code: agentwire.CodeOf(err), Message: err.Error()}
	if doc.Code == agentwire.CodeInternal && errors.Is(err, errInvalid) {
		doc.Code = agentwire.CodeInvalid
	}
	var pe *pathError
	if errors.As(err, &pe) {
		doc.Path, doc.Reason = pe.path, pe.reason
	}
	return doc
}

// writeError answers err as an Error document. A request body not read yet
// is drained first, as the scripts drain their stdin: a refused upload is
// consumed, never left blocking its sender, and the answer follows it.
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	_, _ = io.Copy(io.Discard, r.Body)
	doc := wireError(err)
	status := statusOf[doc.Code]
	if errors.Is(err, errLengthRequired) {
		status = http.StatusLengthRequired
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(doc)
}
