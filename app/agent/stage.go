package agent

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"strconv"
	"strings"
	"syscall"

	"github.com/sandgate/sandgate/core/agentwire"
	"github.com/sandgate/sandgate/core/sandbox"
)

// A staged write is PathFile's PUT split in two around a transfer the agent
// does not carry (Docker's archive PUT, which runs as root in the daemon):
// every decision about whether the sandbox's user may write the path is made
// here, as that user, before the transfer (stageFile), and the transfer's
// result is checked here after it (landFile).

// stageFile serves PathStage: the write's path faults, its parents, and an
// empty temporary file beside the target owned by the sandbox's user.
func stageFile(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Query().Get(agentwire.QueryPath)
	err := checkFilePath(p)
	var tmp string
	if err == nil {
		tmp, err = createTemp(p)
	}
	if err != nil {
		writeError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.WriteString(w, tmp)
}

// createTemp prepares target and creates its empty temporary file.
func createTemp(target string) (string, error) {
	if err := prepareTarget(target); err != nil {
		return "", err
	}
	tmp := tempName(target)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return "", notWritable(target, err)
	}
	if err := f.Close(); err != nil {
		_ = os.Remove(tmp)
		return "", notWritable(target, err)
	}
	return tmp, nil
}

// landFile serves PathLand: the temporary checked and landed, or discarded.
func landFile(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	target, tmp := q.Get(agentwire.QueryPath), q.Get(agentwire.QueryTmp)
	err := checkFilePath(target)
	if err == nil {
		err = checkTempName(target, tmp)
	}
	switch {
	case err != nil:
	case q.Get(agentwire.QueryDiscard) == "1":
		if rerr := os.Remove(tmp); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			err = notWritable(target, rerr)
		}
	default:
		var size int64
		size, err = strconv.ParseInt(q.Get(agentwire.QuerySize), 10, 64)
		if err != nil || size < 0 {
			err = fmt.Errorf("size %q: not a length: %w", q.Get(agentwire.QuerySize), errInvalid)
			break
		}
		err = landStaged(target, tmp, size)
	}
	if err != nil {
		writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// checkTempName refuses a tmp that is not a temporary name beside target
// (tempName's form): the route renames or removes only what a staged write
// of target created, whatever the caller sends.
func checkTempName(target, tmp string) error {
	base := path.Base(tmp)
	hex := strings.TrimPrefix(base, sandbox.TempPrefix)
	if path.Dir(tmp) != path.Dir(target) || hex == base || len(hex) != 16 || strings.Trim(hex, "0123456789abcdef") != "" {
		return fmt.Errorf("tmp %q: not a temporary file of %q: %w", tmp, target, errInvalid)
	}
	return nil
}

// landStaged is stage-land.sh: tmp must be a regular file (never a
// symlink) of exactly size bytes, else it is removed and the write is a
// size mismatch; then it lands as PathFile's PUT lands.
func landStaged(target, tmp string, size int64) error {
	fi, err := os.Lstat(tmp)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fault(target, sandbox.ErrSizeMismatch, "the body never arrived")
	case err != nil:
		err = notWritable(target, err)
	case !fi.Mode().IsRegular():
		err = fault(target, sandbox.ErrSizeMismatch, "the body is not a regular file")
	case fi.Size() != size:
		err = fault(target, sandbox.ErrSizeMismatch, fmt.Sprintf("body of %d bytes, want %d", fi.Size(), size))
	}
	if err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return land(target, tmp)
}
