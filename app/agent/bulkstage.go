package agent

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"

	"golang.org/x/sys/unix"

	"github.com/sandgate/sandgate/core/agentwire"
	"github.com/sandgate/sandgate/core/sandbox"
)

// A staged batch is PathFiles split in two around a transfer the agent does
// not carry (Docker's archive PUT, which runs as root in the daemon, and
// extracts a whole tree in one pass where the agent spends a few system
// calls a file): stageFiles decides, as the sandbox's user, whether every
// member may be written before the transfer; landFiles checks what arrived
// and lands it after.

// maxStagedBody bounds a batch's list (a few hundred thousand members).
const maxStagedBody = 64 << 20

// stageFiles serves PathFilesStage: bulk-prepare.sh's checks, per
// directory, never per member.
func stageFiles(w http.ResponseWriter, r *http.Request) {
	files, err := decodeStaged(w, r)
	if err == nil {
		err = prepareParents(files)
	}
	if err != nil {
		writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// landFiles serves PathFilesLand.
func landFiles(w http.ResponseWriter, r *http.Request) {
	files, err := decodeStaged(w, r)
	switch {
	case err != nil:
	case r.URL.Query().Get(agentwire.QueryDiscard) == "1":
		removeTemps(files)
	default:
		err = landArrived(files)
	}
	if err != nil {
		writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// decodeStaged reads a batch and refuses it whole when a member's path is
// invalid, its Tmp not a temporary name beside it, or its size negative.
func decodeStaged(w http.ResponseWriter, r *http.Request) ([]agentwire.StagedFile, error) {
	var files []agentwire.StagedFile
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxStagedBody)).Decode(&files); err != nil {
		return nil, fmt.Errorf("staged files: %w: %w", errInvalid, err)
	}
	for i, f := range files {
		err := checkFilePath(f.Path)
		if err == nil {
			err = checkTempName(f.Path, f.Tmp)
		}
		if err == nil && f.Size < 0 {
			err = fmt.Errorf("size %d: not a length: %w", f.Size, errInvalid)
		}
		if err != nil {
			return nil, fmt.Errorf("staged files: member %d: %w", i, err)
		}
	}
	_, _ = io.Copy(io.Discard, r.Body)
	return files, nil
}

// prepareParents checks every member's parent chain before it makes
// anything (a member whose parent is another member's target is blocked
// too), then makes the missing parents and checks each parent lets the
// sandbox's user create files: access(2) answers with the real uid, the
// sandbox's user.
func prepareParents(files []agentwire.StagedFile) error {
	targets := make(map[string]bool, len(files))
	for _, f := range files {
		targets[f.Path] = true
	}
	checked := map[string]bool{}
	for _, f := range files {
		for d := path.Dir(f.Path); d != "/"; d = path.Dir(d) {
			if targets[d] {
				return fault(f.Path, sandbox.ErrNotDirectory, "")
			}
		}
		if d := path.Dir(f.Path); !checked[d] {
			checked[d] = true
			if err := checkBlocked(d, f.Path); err != nil {
				return err
			}
		}
	}
	made := map[string]bool{}
	for _, f := range files {
		d := path.Dir(f.Path)
		if made[d] {
			continue
		}
		made[d] = true
		if err := mkdirs(d, f.Path); err != nil {
			return err
		}
		if err := unix.Access(d, unix.W_OK|unix.X_OK); err != nil {
			return notWritable(f.Path, err)
		}
	}
	return nil
}

// landArrived checks that every member arrived whole, then lands them in
// order until the first failure; every temporary not landed is removed.
func landArrived(files []agentwire.StagedFile) error {
	for _, f := range files {
		fi, err := os.Lstat(f.Tmp)
		if err != nil || !fi.Mode().IsRegular() || fi.Size() != f.Size {
			removeTemps(files)
			return fault(f.Path, sandbox.ErrShortDelivery, "the member did not arrive whole")
		}
	}
	for i, f := range files {
		if err := land(f.Path, f.Tmp); err != nil {
			removeTemps(files[i+1:])
			return err
		}
	}
	return nil
}

// removeTemps removes the batch's temporary files.
func removeTemps(files []agentwire.StagedFile) {
	for _, f := range files {
		_ = os.Remove(f.Tmp)
	}
}
