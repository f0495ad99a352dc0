package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// writeLocal writes src to the local file dst through a temporary file in
// the same directory, renamed into place only once the transfer is complete
// and check accepts its length: a broken download never leaves a truncated
// file under dst's name.
func writeLocal(dst string, src io.Reader, check func(n int64) error) (int64, error) {
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".executor-*")
	if err != nil {
		return 0, fmt.Errorf("%s: %w", dst, err)
	}
	n, err := io.Copy(tmp, src)
	if err == nil {
		err = check(n)
	}
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), dst)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return n, err
	}
	return n, nil
}

// sizeCheck accepts exactly want bytes; the caller's error says how many
// came.
func sizeCheck(want int64) func(int64) error {
	return func(n int64) error {
		if n != want {
			return errors.New("the stream's length differs from its announced size")
		}
		return nil
	}
}

// openUpload opens a local upload source with its size: a regular file, or
// stdin ("-"), spooled to a temporary file when it is a pipe, since the API
// takes a stream write only with its length up front. cleanup closes (and
// removes the spool).
func openUpload(src string, stdin io.Reader, limit int64) (r io.Reader, size int64, cleanup func(), err error) {
	if src != "-" {
		f, err := os.Open(src)
		if err != nil {
			return nil, 0, nil, err
		}
		st, err := f.Stat()
		if err == nil && !st.Mode().IsRegular() {
			err = usagef("%s is not a regular file (cp copies one file)", src)
		}
		if err != nil {
			_ = f.Close()
			return nil, 0, nil, err
		}
		return f, st.Size(), func() { _ = f.Close() }, nil
	}
	if f, ok := stdin.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
			return f, st.Size(), func() {}, nil
		}
	}
	return spool(stdin, limit)
}

// errTooLarge: stdin holds more than the API takes in one write.
var errTooLarge = errors.New("stdin is larger than the transfer limit")

func spool(stdin io.Reader, limit int64) (io.Reader, int64, func(), error) {
	if stdin == nil {
		return nil, 0, nil, usagef("no stdin to read")
	}
	f, err := os.CreateTemp("", "executor-cp-*")
	if err != nil {
		return nil, 0, nil, fmt.Errorf("spooling stdin: %w", err)
	}
	cleanup := func() { _ = f.Close(); _ = os.Remove(f.Name()) }
	n, err := io.Copy(f, io.LimitReader(stdin, limit+1))
	switch {
	case err != nil:
		err = fmt.Errorf("spooling stdin: %w", err)
	case n > limit:
		err = fmt.Errorf("%w (%d bytes)", errTooLarge, limit)
	default:
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		cleanup()
		return nil, 0, nil, err
	}
	return f, n, cleanup, nil
}
