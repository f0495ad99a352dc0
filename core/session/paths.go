package session

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
)

// CheckPath validates a file path a caller hands to a read or a write
// (sandbox.CheckFilePath) before any sandbox is asked. A malformed path
// wraps ErrInvalidRequest and names field; "/" stays sandbox.ErrIsDirectory,
// which is what the sandbox would answer.
func CheckPath(field, p string) error { return checkPathWith(field, p, sandbox.CheckFilePath) }

// CheckMetaPath validates the path of a stat, a listing or a mkdir, where
// "/" is a valid path (sandbox.CheckMetaPath); a bad one is
// ErrInvalidRequest naming field.
func CheckMetaPath(field, p string) error { return checkPathWith(field, p, sandbox.CheckMetaPath) }

// CheckRemovePath validates the path of a remove: CheckPath's rules, and
// "/" is ErrInvalidRequest (sandbox.CheckRemovePath).
func CheckRemovePath(field, p string) error { return checkPathWith(field, p, sandbox.CheckRemovePath) }

// checkPathWith runs check on p: ErrIsDirectory (a read or write of "/")
// keeps its sentinel, anything else is ErrInvalidRequest naming field.
func checkPathWith(field, p string, check func(string) error) error {
	err := check(p)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, sandbox.ErrIsDirectory):
		return fmt.Errorf("%s: %w", field, err)
	}
	return fmt.Errorf("%w: %s: %w", ErrInvalidRequest, field, err)
}

// CheckExportRoot validates the root of an export: absolute, clean, NUL-free
// and not "/", whose base name names no directory to put the members under.
func CheckExportRoot(root string) error {
	if !strings.HasPrefix(root, "/") || path.Clean(root) != root || root == "/" || containsNUL(root) {
		return fmt.Errorf("%w: root %q: must be an absolute, clean path other than /", ErrInvalidRequest, domain.Clip(root))
	}
	return nil
}

// CheckBatch validates every member path of a WriteFiles batch, naming the
// first bad one as files[i].path.
func CheckBatch(files []sandbox.FileWrite) error {
	for i, f := range files {
		if err := CheckPath(fmt.Sprintf("files[%d].path", i), f.Path); err != nil {
			return err
		}
	}
	return nil
}

// CheckExec validates an exec request (sandbox.ValidateExec) as a request
// error: the wrapped error is both ErrInvalidRequest and
// sandbox.ErrInvalidExec.
func CheckExec(req sandbox.ExecRequest) error {
	if err := sandbox.ValidateExec(req); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidRequest, err)
	}
	return nil
}
