package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"

	"github.com/sandgate/sandgate/core/agentwire"
	"github.com/sandgate/sandgate/core/sandbox"
)

// The routes the scripts never had (stat, list, remove, mkdir) follow
// lstat(2)'s view of a path, as the read and write routes do: a final
// symlink is never followed, except by list, which lists the directory a
// symlink names as `ls` does.

// anyPath validates a path for the routes that take "/" too.
func anyPath(r *http.Request) (string, error) {
	p := r.URL.Query().Get(agentwire.QueryPath)
	if p == "/" {
		return p, nil
	}
	if err := checkFilePath(p); err != nil {
		return "", err
	}
	return p, nil
}

// flag reads a boolean query parameter: "1" or "true" is set, absent or
// "0" or "false" is not, anything else is refused.
func flag(r *http.Request, name string) (bool, error) {
	switch v := r.URL.Query().Get(name); strings.ToLower(v) {
	case "1", "true":
		return true, nil
	case "", "0", "false":
		return false, nil
	default:
		return false, fmt.Errorf("%s %q: not a boolean: %w", name, v, errInvalid)
	}
}

// stat serves PathStat: the path's lstat.
func stat(w http.ResponseWriter, r *http.Request) {
	p, err := anyPath(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	if err := checkParent(p); err != nil {
		writeError(w, r, err)
		return
	}
	fi, err := os.Lstat(p)
	if err != nil {
		writeError(w, r, lstatFault(p, err))
		return
	}
	writeJSON(w, fileInfo(p, p, fi))
}

// list serves PathList: a directory's entries, lstat'ed, sorted by name,
// at most sandbox.MaxListEntries (more is file_too_large: a listing is never
// answered in part). An entry removed between the directory read and its
// lstat is left out.
func list(w http.ResponseWriter, r *http.Request) {
	p, err := anyPath(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	names, err := readDir(p)
	if err != nil {
		writeError(w, r, err)
		return
	}
	out := make([]agentwire.FileInfo, 0, len(names))
	for _, name := range names {
		full := path.Join(p, name)
		fi, err := os.Lstat(full)
		if err != nil {
			continue
		}
		out = append(out, fileInfo(name, full, fi))
	}
	slices.SortFunc(out, func(a, b agentwire.FileInfo) int { return strings.Compare(a.Name, b.Name) })
	writeJSON(w, out)
}

// readDir reads the names in directory p, classifying its faults like a
// read's, and refuses one of more than sandbox.MaxListEntries without
// reading further: the bound holds the agent's memory too.
func readDir(p string) ([]string, error) {
	if err := checkParent(p); err != nil {
		return nil, err
	}
	fi, err := os.Stat(p)
	switch {
	case err != nil:
		return nil, lstatFault(p, err)
	case !fi.IsDir():
		return nil, fault(p, sandbox.ErrNotDirectory, "")
	}
	d, err := os.Open(p)
	if err != nil {
		return nil, openFault(p, err)
	}
	defer func() { _ = d.Close() }()
	var names []string
	for {
		batch, err := d.Readdirnames(1024)
		names = append(names, batch...)
		switch {
		case len(names) > sandbox.MaxListEntries:
			return nil, fault(p, sandbox.ErrTooManyEntries, "")
		case errors.Is(err, io.EOF):
			return names, nil
		case err != nil:
			return nil, openFault(p, err)
		}
	}
}

// fileInfo describes fi, the lstat of full.
func fileInfo(name, full string, fi fs.FileInfo) agentwire.FileInfo {
	info := agentwire.FileInfo{Name: name, Size: fi.Size(), ModTime: fi.ModTime().UTC(), Mode: uint32(fi.Mode().Perm())}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		info.Mode = st.Mode & 0o7777
	}
	switch m := fi.Mode(); {
	case m.IsRegular():
		info.Type = agentwire.TypeFile
	case m.IsDir():
		info.Type = agentwire.TypeDir
	case m&fs.ModeSymlink != 0:
		info.Type = agentwire.TypeSymlink
		info.LinkTarget, _ = os.Readlink(full)
	default:
		info.Type = agentwire.TypeOther
	}
	return info
}

// remove serves PathRemove: a file, a symlink (never what it names) or an
// empty directory; a non-empty directory only with recursive, and "/"
// never.
func remove(w http.ResponseWriter, r *http.Request) {
	p, err := anyPath(r)
	var recursive bool
	if err == nil {
		recursive, err = flag(r, agentwire.QueryRecursive)
	}
	if err == nil && p == "/" {
		err = fmt.Errorf("remove /: refused: %w", errInvalid)
	}
	if err == nil {
		err = removePath(p, recursive)
	}
	if err != nil {
		writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func removePath(p string, recursive bool) error {
	if err := checkParent(p); err != nil {
		return err
	}
	fi, err := os.Lstat(p)
	if err != nil {
		return lstatFault(p, err)
	}
	if fi.IsDir() && recursive {
		err = os.RemoveAll(p)
	} else {
		err = os.Remove(p)
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, syscall.ENOTEMPTY), errors.Is(err, syscall.EEXIST):
		return fault(p, sandbox.ErrIsDirectory, "directory not empty")
	case errors.Is(err, syscall.EBUSY):
		return fault(p, sandbox.ErrNotReplaceable, "mount point")
	case errors.Is(err, fs.ErrNotExist):
		return nil // gone meanwhile: what was asked for holds
	}
	return notWritable(p, err)
}

// mkdir serves PathMkdir: a directory 0755 whatever the umask; with
// parents, its missing parents too (0755). A directory already there (or a
// symlink to one) is success with parents, as `mkdir -p` has it, and
// is_directory without, as mkdir(2)'s EEXIST; a non-directory there is
// not_directory, a missing parent without parents file_not_exist.
func mkdir(w http.ResponseWriter, r *http.Request) {
	p, err := anyPath(r)
	var parents bool
	if err == nil {
		parents, err = flag(r, agentwire.QueryParents)
	}
	if err == nil {
		err = makeDir(p, parents)
	}
	if err != nil {
		writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func makeDir(p string, parents bool) error {
	if err := checkBlocked(p, p); err != nil {
		return err
	}
	switch {
	case isDir(p) && parents:
		return nil
	case isDir(p):
		return fault(p, sandbox.ErrIsDirectory, "directory exists")
	case parents:
		return mkdirs(p, p)
	case !isDir(path.Dir(p)):
		return fault(p, sandbox.ErrFileNotExist, "parent directory missing")
	}
	return mkdirs(p, p)
}

// writeJSON answers v as a JSON document.
func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
