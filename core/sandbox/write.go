package sandbox

import (
	"fmt"
	"path"
	"strconv"
	"strings"
)

// ScriptName is $0 of every in-sandbox script: the name bash puts in front
// of its own error messages ("sandgate: line 3: /x: Permission denied").
const ScriptName = "sandgate"

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
		return fmt.Errorf("path %q: contains a NUL byte", clipText(p, 256))
	case len(p) > maxPathBytes:
		return fmt.Errorf("path: %d bytes, longer than %d", len(p), maxPathBytes)
	case !path.IsAbs(p):
		return fmt.Errorf("path %q: not absolute", clipText(p, 256))
	case path.Clean(p) != p:
		return fmt.Errorf("path %q: not clean (want %q)", clipText(p, 256), clipText(path.Clean(p), 256))
	case p == "/":
		return fmt.Errorf("path %q: %w", p, ErrIsDirectory)
	}
	return nil
}

// scriptArgv is the argv of an exec that runs script with args as $1…:
// paths travel only as arguments, never as script text.
func scriptArgv(script string, args ...string) []string {
	return append([]string{"/bin/bash", "-c", script, ScriptName}, args...)
}

// WriteScript is the single-write script that WriteFile and WriteFileStream
// both run as one exec (argv from WriteArgs) with the body on stdin. The
// adapter offers at most SIZE+1 bytes (io.LimitReader(src, size+1)) and then
// closes stdin; the script is the judge of the length: it reads exactly SIZE
// bytes into TMP and fails with ExitSizeMismatch if fewer arrived or any byte
// follows, so a wrong length never lands.
//
// Order: path faults (82), a directory target (81), an unreplaceable target
// (84); parents made under umask 022 (85, or 82 on a race); the body copied
// into TMP (85 with the strerror: EROFS, EACCES, ENOSPC); the length check
// (88); then __sg_land: the mode kept, a directory that appeared meanwhile
// refused (81), and TMP renamed onto TARGET. Every failure removes TMP and
// drains stdin before exiting, so no residue is left and a refused body never
// blocks its sender.
const WriteScript = ShellLib + writeBody

const writeBody = `
__sg_tmp=$2
__sg_abort() {
	[ "$1" = 0 ] && return 0
	rm -f -- "$__sg_tmp" 2>/dev/null
	cat >/dev/null
}
trap '__sg_abort $?' EXIT

__sg_pathfault "$1" -
__sg_dirfault "$1" -
__sg_unreplaceable "$1" -
__sg_mkdirs "${1%/*}" -
if ! __sg_e=$( { head -c "$3" >"$2"; } 2>&1); then
	__sg_fault 85 - "$(__sg_reason "$__sg_e")"
fi
__sg_n=$(stat -c %s -- "$2")
if [ "$__sg_n" != "$3" ]; then
	__sg_fault 88 - "short body: $__sg_n of $3 bytes"
fi
# A builtin read of one byte (a NUL counts too): no process for the check.
if IFS= read -r -d '' -n 1 _; then
	__sg_fault 88 - "long body: more than $3 bytes"
fi
__sg_land "$1" "$2" -
`

// WriteArgs validates a single write and returns the argv of its exec:
// /bin/bash -c WriteScript sandgate TARGET TMP SIZE, where TMP is a fresh
// TempName beside target. target must pass CheckFilePath and size
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
	return scriptArgv(WriteScript, target, TempName(target), strconv.FormatInt(size, 10)), nil
}

// ClassifyWrite maps the outcome of a WriteScript exec to nil or an error
// matching ErrNotDirectory, ErrIsDirectory, ErrNotReplaceable, ErrNotWritable
// (a *PathNotWritableError with the sandbox's reason) or ErrSizeMismatch,
// naming target; any other non-zero exit is an unclassified error.
func ClassifyWrite(target string, exitCode int, stderr string) error {
	return ClassifyScript(exitCode, stderr, []string{target})
}
