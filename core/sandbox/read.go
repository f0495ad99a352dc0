package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/sandgate/sandgate/core/sandbox/shell"
)

// ReadArgs validates a read and returns the argv of its exec:
// /bin/bash -c SCRIPT sandgate PATH MAXBYTES, SCRIPT being shell.Read
// (read.sh), which answers the path and type faults before any byte is sent
// and then prints a header line with the size and the file's bytes. p must
// pass CheckFilePath and maxBytes must be a length (>= 0); ReadFile passes
// MaxFileBytes. The adapter parses stdout with ParseReadHeader, then takes
// exactly that many bytes, and on a non-zero exit hands exit code and stderr
// to ClassifyRead.
func ReadArgs(p string, maxBytes int64) ([]string, error) {
	if err := CheckFilePath(p); err != nil {
		return nil, err
	}
	if maxBytes < 0 {
		return nil, fmt.Errorf("maxBytes %d: %w", maxBytes, ErrSizeNotALength)
	}
	return scriptArgv(shell.Read, p, strconv.FormatInt(maxBytes, 10)), nil
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

// ParseReadHeader reads the header line the read script prints before the file's
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

// ClassifyRead maps the outcome of a read script exec to nil or an error
// matching ErrNotDirectory, ErrFileNotExist, ErrIsDirectory,
// ErrNotRegularFile, ErrFileTooLarge or ErrNotReadable, naming p; any other
// non-zero exit is an unclassified error carrying the sandbox's message.
func ClassifyRead(p string, exitCode int, stderr string) error {
	return classifyScript(exitCode, stderr, []string{p})
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

// MaxFileBytes is the ReadFile cap (CONTRACT §0); a file of exactly this
// size reads whole.
const MaxFileBytes = 4 << 20
