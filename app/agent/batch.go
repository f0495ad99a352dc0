package agent

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"

	"github.com/sandgate/sandgate/core/sandbox"
)

// member is one staged member of a batch.
type member struct {
	target, tmp string
}

// writeFiles serves PathFiles' PUT: the bulk scripts' contract. Every
// member of the tar is staged first — its parent chain checked, its
// parents made 0755, its bytes in a temporary file beside its target — so
// a short or broken tar, or a blocked parent, lands nothing. Then the
// members land in order, each as a single write lands, and the first
// failure stops the batch: earlier members stay, later ones are never
// written, every temporary file not landed is removed. A failure names its
// member. As with WriteFiles on the fallback path, no unreplaceable probe:
// a rename onto a mount point fails as not-replaceable by itself (EBUSY).
//
// One difference with the scripts, which check every parent before they
// make any: members arrive one after the other, so directories made for
// earlier members stay when a later member's parent is blocked (its files
// do not).
func writeFiles(w http.ResponseWriter, r *http.Request) {
	staged, err := stageAll(tar.NewReader(r.Body))
	if err == nil {
		err = landAll(staged)
	}
	if err != nil {
		writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// stageAll stages every member of tr; on failure it removes what it staged.
func stageAll(tr *tar.Reader) (staged []member, err error) {
	defer func() {
		if err != nil {
			discard(staged)
		}
	}()
	targets := map[string]bool{}
	for i := 0; ; i++ {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return staged, nil
		}
		if err != nil {
			return staged, fmt.Errorf("files: member %d: %w: %w", i, sandbox.ErrShortDelivery, err)
		}
		if err := checkMember(i, hdr, targets); err != nil {
			return staged, err
		}
		targets[hdr.Name] = true
		m, err := stageMember(hdr.Name, tr, hdr.Size)
		if err != nil {
			return staged, err
		}
		staged = append(staged, m)
	}
}

// checkMember refuses a member that is not a regular file with a valid
// path, and one whose parent chain holds an earlier member's target (one of
// the two would be blocked by the other, as PlanBulk refuses).
func checkMember(i int, hdr *tar.Header, targets map[string]bool) error {
	if hdr.Typeflag != tar.TypeReg {
		return fmt.Errorf("files: member %d %q: not a regular file: %w", i, hdr.Name, sandbox.ErrShortDelivery)
	}
	if err := checkFilePath(hdr.Name); err != nil {
		return fmt.Errorf("files: member %d: %w", i, err)
	}
	for p := path.Dir(hdr.Name); p != "/"; p = path.Dir(p) {
		if targets[p] {
			return fault(hdr.Name, sandbox.ErrNotDirectory, "")
		}
	}
	return nil
}

// stageMember checks target's parent chain, makes its parents and stages
// its bytes.
func stageMember(target string, src io.Reader, size int64) (member, error) {
	if err := checkParent(target); err != nil {
		return member{}, err
	}
	if err := mkdirs(path.Dir(target), target); err != nil {
		return member{}, err
	}
	tmp, err := stage(target, src, size, false)
	if err != nil {
		if errors.Is(err, sandbox.ErrSizeMismatch) {
			err = fault(target, sandbox.ErrShortDelivery, "the archive ended inside the member")
		}
		return member{}, err
	}
	return member{target: target, tmp: tmp}, nil
}

// landAll lands the staged members in order until the first failure.
func landAll(staged []member) error {
	for i, m := range staged {
		if err := land(m.target, m.tmp); err != nil {
			discard(staged[i+1:])
			return err
		}
	}
	return nil
}

// discard removes the temporary files of members not landed.
func discard(staged []member) {
	for _, m := range staged {
		_ = os.Remove(m.tmp)
	}
}
