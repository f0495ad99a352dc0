package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// ReadScript is the read script that ReadFile and ReadFileStream both run as
// one exec (argv from ReadArgs). It answers, in order: a non-directory in the
// parent chain (82); a missing path (80, but a dangling symlink is a symlink);
// a directory or a symlink to one (81, as a symlink to a directory is to every
// question asked of a path); any other symlink, never followed, even to a
// regular file (83); a FIFO, socket or device (83); a file above MAXBYTES
// (86, before any byte is sent). Then it prints the header line "<size>\n" on
// stdout followed by exactly size bytes of the file.
//
// The file is opened once, after the type checks (opening a FIFO would
// block), and both the size and the bytes come from that open file, so a file
// growing meanwhile never sends more than its header says. A file the
// sandbox's user cannot open (a non-root user and a 0600 file of root's)
// fails before the header with 89 and the strerror ("Permission denied"):
// the open is tried again in a subshell only to capture its message, so the
// reason is the kernel's and never a guess.
const ReadScript = ShellLib + readBody

const readBody = `
__sg_pathfault "$1" -
if [ ! -e "$1" ] && [ ! -L "$1" ]; then
	__sg_fault 80 - "No such file or directory"
fi
__sg_dirfault "$1" -
if [ -L "$1" ]; then
	__sg_fault 83 - "symbolic link"
fi
if [ ! -f "$1" ]; then
	__sg_fault 83 - "not a regular file"
fi
if ! { exec 3<"$1"; } 2>/dev/null; then
	__sg_e=$( { : <"$1"; } 2>&1 )
	__sg_fault 89 - "$(__sg_reason "$__sg_e")"
fi
__sg_n=$(stat -c %s - <&3) || exit 1
if [ "$__sg_n" -gt "$2" ]; then
	__sg_fault 86 - "$__sg_n bytes, above $2"
fi
printf '%s\n' "$__sg_n"
[ "${3-}" = stat ] && exit 0
exec head -c "$__sg_n" <&3 3<&-
`

// ReadArgs validates a read and returns the argv of its exec:
// /bin/bash -c ReadScript sandgate PATH MAXBYTES. p must pass CheckFilePath
// and maxBytes must be a length (>= 0); ReadFile passes MaxFileBytes. The
// adapter parses stdout with ParseReadHeader, then takes exactly that many
// bytes, and on a non-zero exit hands exit code and stderr to ClassifyRead.
func ReadArgs(p string, maxBytes int64) ([]string, error) {
	if err := CheckFilePath(p); err != nil {
		return nil, err
	}
	if maxBytes < 0 {
		return nil, fmt.Errorf("maxBytes %d: %w", maxBytes, ErrSizeNotALength)
	}
	return scriptArgv(ReadScript, p, strconv.FormatInt(maxBytes, 10)), nil
}

// ReadStatArgs is ReadArgs for a read whose bytes travel another way (the
// Docker archive endpoint, several times faster than an exec's stdout for a
// large file): the script answers the same checks and prints the header
// line, then exits without sending the file.
func ReadStatArgs(p string, maxBytes int64) ([]string, error) {
	argv, err := ReadArgs(p, maxBytes)
	if err != nil {
		return nil, err
	}
	return append(argv, "stat"), nil
}

// maxHeaderDigits is the digit count of the largest int64.
const maxHeaderDigits = 19

// ParseReadHeader reads the header line ReadScript prints before the file's
// bytes and returns the announced size. It reads one byte at a time and
// never past the newline, so r is left at the first byte of the file. The
// header comes from the sandbox and is not trusted: anything but a plain
// decimal (no sign, no leading zero) of at most maxBytes followed by "\n" is
// an error, so a forged size can never make the caller allocate more than
// it allowed. A stream that ends before the newline (the script failed and
// printed nothing) wraps io.ErrUnexpectedEOF: look at the exit code.
func ParseReadHeader(r io.Reader, maxBytes int64) (int64, error) {
	var digits []byte
	var b [1]byte
	for {
		if _, err := io.ReadFull(r, b[:]); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return 0, fmt.Errorf("read header: %w", err)
		}
		if b[0] == '\n' {
			break
		}
		if b[0] < '0' || b[0] > '9' || len(digits) == maxHeaderDigits {
			return 0, fmt.Errorf("read header: malformed (%q so far)", append(digits, b[0]))
		}
		digits = append(digits, b[0])
	}
	if len(digits) == 0 || (digits[0] == '0' && len(digits) > 1) {
		return 0, fmt.Errorf("read header: malformed size %q", digits)
	}
	n, err := strconv.ParseInt(string(digits), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("read header: size %q: %w", digits, err)
	}
	if n > maxBytes {
		return 0, fmt.Errorf("read header: size %d above maxBytes %d: %w", n, maxBytes, ErrFileTooLarge)
	}
	return n, nil
}

// ClassifyRead maps the outcome of a ReadScript exec to nil or an error
// matching ErrNotDirectory, ErrFileNotExist, ErrIsDirectory,
// ErrNotRegularFile, ErrFileTooLarge or ErrNotReadable, naming p; any other
// non-zero exit is an unclassified error carrying the sandbox's message.
func ClassifyRead(p string, exitCode int, stderr string) error {
	return ClassifyScript(exitCode, stderr, []string{p})
}

// DecodeRead is ReadFile's last step on both backends: out is everything
// the read script (ReadArgs with MaxFileBytes) printed after exiting 0 — the
// header, then the file — and the file's bytes are returned only when
// exactly as many arrived as the header announced.
func DecodeRead(path string, out []byte) ([]byte, error) {
	r := bytes.NewReader(out)
	n, err := ParseReadHeader(r, MaxFileBytes)
	if err != nil {
		return nil, fmt.Errorf("read %q: %w", path, err)
	}
	if int64(r.Len()) != n {
		return nil, fmt.Errorf("read %q: %d bytes announced, %d arrived: %w", path, n, r.Len(), io.ErrUnexpectedEOF)
	}
	return out[len(out)-r.Len():], nil
}
