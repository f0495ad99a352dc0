package agent

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"syscall"

	"github.com/sandgate/sandgate/core/agentwire"
	"github.com/sandgate/sandgate/core/sandbox"
)

// writeFile serves PathFile's PUT: write.sh with system calls. The body's
// length is Content-Length; a body that ends early fails with
// size_mismatch and the target untouched. A body longer than
// Content-Length cannot reach the agent (HTTP frames it): a client whose
// source turns out longer must abort the request before its last byte,
// which the agent then sees as a short body.
func writeFile(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Query().Get(agentwire.QueryPath)
	err := checkFilePath(p)
	if err == nil && r.ContentLength < 0 {
		err = errLengthRequired
	}
	if err == nil {
		err = writeAtomic(p, r.Body, r.ContentLength)
	}
	if err != nil {
		writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// writeAtomic writes exactly size bytes of src to target, in write.sh's
// order: a non-directory in the parent chain, a directory target, an
// unreplaceable target (device node, mount point); parents made 0755; the
// bytes copied into a temporary file beside target; the length checked;
// then land. Any failure removes the temporary file and leaves target as it
// was. No fsync: the fallback path does none either, and a sandbox is
// disposable (a crash of its kernel loses the sandbox, not just a file).
func writeAtomic(target string, src io.Reader, size int64) error {
	if err := prepareTarget(target); err != nil {
		return err
	}
	tmp, err := stage(target, src, size, true)
	if err != nil {
		return err
	}
	return land(target, tmp)
}

// prepareTarget answers a write's path faults before a byte travels, in
// write.sh's order, and makes target's parents.
func prepareTarget(target string) error {
	if err := checkParent(target); err != nil {
		return err
	}
	if err := checkNotDir(target); err != nil {
		return err
	}
	if err := checkReplaceable(target); err != nil {
		return err
	}
	return mkdirs(path.Dir(target), target)
}

// tempName is a fresh temporary name beside target, CONTRACT §0's
// <dir>/.sandgate-write-<16 hex>, which the stale-temporary sweep knows.
func tempName(target string) string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return path.Join(path.Dir(target), sandbox.TempPrefix+hex.EncodeToString(b[:]))
}

// stage copies exactly size bytes of src into a new temporary file beside
// target and returns its name; with checkLong, a byte more in src is a
// size mismatch too. A failure removes the file: not-writable with the
// strerror when the file cannot be made or written (EROFS, EACCES, ENOSPC),
// size_mismatch when src ends early.
func stage(target string, src io.Reader, size int64, checkLong bool) (string, error) {
	tmp := tempName(target)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return "", notWritable(target, err)
	}
	in := &readErr{r: src}
	n, err := io.CopyN(f, in, size)
	switch {
	case n < size && in.err != nil:
		err = fault(target, sandbox.ErrSizeMismatch, fmt.Sprintf("short body: %d of %d bytes", n, size))
	case err != nil:
		err = notWritable(target, err)
	case checkLong && hasMore(src):
		err = fault(target, sandbox.ErrSizeMismatch, fmt.Sprintf("long body: more than %d bytes", size))
	}
	if cerr := f.Close(); err == nil && cerr != nil {
		err = notWritable(target, cerr)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return "", err
	}
	return tmp, nil
}

// readErr remembers its reader's error, so a short source (size_mismatch)
// is told from a failing disk (not-writable).
type readErr struct {
	r   io.Reader
	err error
}

func (r *readErr) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil {
		r.err = err
	}
	return n, err
}

// hasMore reports whether r yields another byte.
func hasMore(r io.Reader) bool {
	var b [1]byte
	n, _ := io.ReadFull(r, b[:])
	return n > 0
}

// land is __sg_land: give tmp the mode of an existing regular target (not a
// symlink), else 0644; refuse a target that became a directory meanwhile;
// rename tmp onto target. A failed rename is classified again: a blocked
// parent, a directory, else not-writable with the strerror. Any failure
// removes tmp.
func land(target, tmp string) error {
	err := os.Chmod(tmp, keptMode(target))
	if err != nil {
		err = notWritable(target, err)
	}
	if err == nil {
		err = checkNotDir(target)
	}
	if err == nil {
		if rerr := os.Rename(tmp, target); rerr != nil {
			err = renameFault(target, rerr)
		}
	}
	if err != nil {
		_ = os.Remove(tmp)
	}
	return err
}

// keptMode is the mode a write gives target: an existing regular file's
// permission bits with setuid, setgid and sticky (what `stat -c %a` shows),
// else 0644, so a new file does not depend on the umask.
func keptMode(target string) os.FileMode {
	var st syscall.Stat_t
	if err := syscall.Lstat(target, &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return 0o644
	}
	m := os.FileMode(st.Mode & 0o777)
	if st.Mode&syscall.S_ISUID != 0 {
		m |= os.ModeSetuid
	}
	if st.Mode&syscall.S_ISGID != 0 {
		m |= os.ModeSetgid
	}
	if st.Mode&syscall.S_ISVTX != 0 {
		m |= os.ModeSticky
	}
	return m
}

// renameFault classifies a failed rename onto target.
func renameFault(target string, err error) error {
	if blocked := checkParent(target); blocked != nil {
		return blocked
	}
	if dir := checkNotDir(target); dir != nil {
		return dir
	}
	if errors.Is(err, syscall.EBUSY) {
		return fault(target, sandbox.ErrNotReplaceable, strerror(err))
	}
	return notWritable(target, err)
}
