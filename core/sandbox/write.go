package sandbox

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox/shell"
)

// scriptName is $0 of every in-sandbox script: the name bash puts in front
// of its own error messages ("sandgate: line 3: /x: Permission denied").
const scriptName = "sandgate"

// maxPathBytes is PATH_MAX less its NUL: a longer path cannot name a file on
// Linux, so it is refused with a clear error before any exec.
const maxPathBytes = 4095

// CheckFilePath validates a path a caller hands to a read or a write: it must
// be non-empty, NUL-free, absolute, clean (path.Clean leaves it unchanged) and
// at most 4095 bytes. "/" itself is valid as a path but is a directory, so it
// is refused with ErrIsDirectory, which is what the sandbox would answer.
func CheckFilePath(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("path: empty")
	case strings.IndexByte(p, 0) >= 0:
		return fmt.Errorf("path %q: contains a NUL byte", domain.ClipTo(p, 256))
	case len(p) > maxPathBytes:
		return fmt.Errorf("path: %d bytes, longer than %d", len(p), maxPathBytes)
	case !path.IsAbs(p):
		return fmt.Errorf("path %q: not absolute", domain.ClipTo(p, 256))
	case path.Clean(p) != p:
		return fmt.Errorf("path %q: not clean (want %q)", domain.ClipTo(p, 256), domain.ClipTo(path.Clean(p), 256))
	case p == "/":
		return fmt.Errorf("path %q: %w", p, ErrIsDirectory)
	}
	return nil
}

// scriptArgv is the argv of an exec that runs script with args as $1…:
// paths travel only as arguments, never as script text.
func scriptArgv(script string, args ...string) []string {
	return append([]string{"/bin/bash", "-c", script, scriptName}, args...)
}

// WriteArgs validates a single write and returns the argv of its exec:
// /bin/bash -c SCRIPT sandgate TARGET TMP SIZE (SCRIPT: shell.Write), where TMP is a fresh
// tempName beside target. target must pass CheckFilePath and size
// CheckWriteSize; both are checked before anything is sent, so a refused
// write creates nothing. The adapter copies io.LimitReader(src, size+1) to
// the exec's stdin, closes it, and hands exit code and stderr to
// ClassifyWrite.
func WriteArgs(target string, size int64) ([]string, error) {
	if err := CheckFilePath(target); err != nil {
		return nil, err
	}
	if err := CheckWriteSize(size); err != nil {
		return nil, err
	}
	return scriptArgv(shell.Write, target, tempName(target), strconv.FormatInt(size, 10)), nil
}

// ClassifyWrite maps the outcome of a write script exec to nil or an error
// matching ErrNotDirectory, ErrIsDirectory, ErrNotReplaceable, ErrNotWritable
// (a *PathNotWritableError with the sandbox's reason) or ErrSizeMismatch,
// naming target; any other non-zero exit is an unclassified error.
func ClassifyWrite(target string, exitCode int, stderr string) error {
	return classifyScript(exitCode, stderr, []string{target})
}
