package sandbox

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/sandgate/sandgate/core/domain"
)

// The in-sandbox scripts (single writes, reads, bulk writes) report a
// classified failure by an exit code in 80..89 — above what their own tools
// return (1, 2), below bash's 126/127 and the 128+N of a signal — plus one
// marker line on stderr:
//
//	sandgate-fault:<code>:<member index or ->:<reason>
//
// The exit code alone decides the error class. The marker only adds the
// failing member (bulk writes) and the strerror text (not-writable); since
// the sandbox can write to stderr too, both are diagnostics: an index that is
// not a valid member names no member rather than a wrong one.
const (
	ExitFileNotExist   = 80
	ExitIsDirectory    = 81
	ExitNotDirectory   = 82
	ExitNotRegularFile = 83
	ExitNotReplaceable = 84
	ExitNotWritable    = 85
	ExitFileTooLarge   = 86
	// ExitShortDelivery: a bulk member is missing or has the wrong size after
	// delivery, so nothing was landed.
	ExitShortDelivery = 87
	// ExitSizeMismatch: a stream write's body was shorter or longer than the
	// announced size; the temporary file was removed.
	ExitSizeMismatch = 88
	// ExitNotReadable: the sandbox's user cannot open the file to read it;
	// the marker carries the strerror.
	ExitNotReadable = 89

	// faultMarker starts the marker line.
	faultMarker = "sandgate-fault:"
)

// ErrShortDelivery reports a bulk batch whose archive arrived incomplete.
var ErrShortDelivery = fmt.Errorf("bulk write delivery incomplete")

// ErrSizeMismatch reports a stream write whose source yielded a different
// number of bytes than announced.
var ErrSizeMismatch = fmt.Errorf("stream length differs from the announced size")

// scriptFault is the parsed marker of a failed script.
type scriptFault struct {
	Code   int
	Member int // -1 when the marker names no member
	Reason string
}

// parseFault returns the last well-formed marker line in stderr. ok is false
// when there is none.
func parseFault(stderr string) (f scriptFault, ok bool) {
	for len(stderr) > 0 {
		i := strings.LastIndex(stderr, faultMarker)
		if i < 0 {
			return scriptFault{}, false
		}
		line := stderr[i+len(faultMarker):]
		stderr = stderr[:i]
		if j := strings.IndexByte(line, '\n'); j >= 0 {
			line = line[:j]
		}
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		code, err := strconv.Atoi(parts[0])
		if err != nil {
			continue
		}
		member := -1
		if parts[1] != "-" {
			m, err := strconv.Atoi(parts[1])
			if err != nil || m < 0 {
				continue
			}
			member = m
		}
		return scriptFault{Code: code, Member: member, Reason: strings.TrimSpace(parts[2])}, true
	}
	return scriptFault{}, false
}

// classSentinel maps a protocol exit code to its sentinel; nil for codes
// outside the protocol.
func classSentinel(code int) error {
	switch code {
	case ExitFileNotExist:
		return ErrFileNotExist
	case ExitIsDirectory:
		return ErrIsDirectory
	case ExitNotDirectory:
		return ErrNotDirectory
	case ExitNotRegularFile:
		return ErrNotRegularFile
	case ExitNotReplaceable:
		return ErrNotReplaceable
	case ExitNotWritable:
		return ErrNotWritable
	case ExitFileTooLarge:
		return ErrFileTooLarge
	case ExitShortDelivery:
		return ErrShortDelivery
	case ExitSizeMismatch:
		return ErrSizeMismatch
	case ExitNotReadable:
		return ErrNotReadable
	}
	return nil
}

// classifyScript maps the exit code and stderr of a failed script to an error.
// paths are the members the script was about, in order (a single write or read
// passes its one path). The class comes from the exit code alone; the marker
// only names the member and the strerror reason. An exit code outside the
// protocol is an unclassified error carrying a clipped stderr.
func classifyScript(exitCode int, stderr string, paths []string) error {
	if exitCode == 0 {
		return nil
	}
	sentinel := classSentinel(exitCode)
	if sentinel == nil {
		return fmt.Errorf("sandbox script exited %d: %s", exitCode, domain.ClipTo(strings.TrimSpace(stderr), 512))
	}
	f, ok := parseFault(stderr)
	path := ""
	switch {
	case ok && f.Code == exitCode && f.Member >= 0 && f.Member < len(paths):
		path = paths[f.Member]
	case len(paths) == 1:
		path = paths[0]
	}
	if !ok || f.Code != exitCode {
		f = scriptFault{Member: -1}
	}
	switch exitCode {
	case ExitNotWritable:
		return &PathNotWritableError{Path: path, Reason: domain.ClipTo(strings.TrimSpace(f.Reason), 256)}
	case ExitNotReadable:
		if f.Reason != "" {
			return fmt.Errorf("%s: %w: %s", path, sentinel, domain.ClipTo(strings.TrimSpace(f.Reason), 256))
		}
	}
	if path == "" {
		return sentinel
	}
	return fmt.Errorf("%s: %w", path, sentinel)
}
