package agentclient

import (
	"errors"
	"fmt"
	"io"

	"github.com/sandgate/sandgate/core/sandbox"
)

// exactReader yields exactly left bytes of src, or fails before the last of
// them is handed on: it looks for one more byte of src before it returns
// the final chunk, so a long source fails the upload while the agent still
// waits for bytes (and lands nothing), and a short one ends it early.
type exactReader struct {
	src  io.Reader
	left int64
}

func (r *exactReader) Read(p []byte) (int, error) {
	if r.left <= 0 {
		return 0, r.checkEnd()
	}
	if int64(len(p)) > r.left {
		p = p[:r.left]
	}
	n, err := r.src.Read(p)
	r.left -= int64(n)
	if r.left == 0 {
		if endErr := r.checkEnd(); !errors.Is(endErr, io.EOF) {
			return 0, endErr
		}
		return n, io.EOF
	}
	if errors.Is(err, io.EOF) {
		return n, fmt.Errorf("source ended %d bytes short: %w", r.left, sandbox.ErrSizeMismatch)
	}
	return n, err
}

// checkEnd is io.EOF when src has nothing more, else the mismatch.
func (r *exactReader) checkEnd() error {
	var one [1]byte
	for {
		n, err := r.src.Read(one[:])
		if n > 0 {
			return fmt.Errorf("source is longer than announced: %w", sandbox.ErrSizeMismatch)
		}
		if errors.Is(err, io.EOF) {
			return io.EOF
		}
		if err != nil {
			return err
		}
	}
}
