package agent

import (
	"bufio"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/sandgate/sandgate/core/sandbox"
)

// The path questions of lib.sh, asked with lstat(2) and stat(2) instead of
// bash's tests, in the same order and with the same answers.

// checkBlocked is __sg_blocked: ErrNotDirectory (naming p) when dir or any
// of its ancestors exists and is not a directory — a dangling symlink is not
// one, a symlink to a directory is. A missing component ends the walk:
// what follows it can still be created.
func checkBlocked(dir, p string) error {
	cur := "/"
	for _, part := range strings.Split(strings.TrimPrefix(dir, "/"), "/") {
		if part == "" {
			continue
		}
		cur = path.Join(cur, part)
		if isDir(cur) {
			continue
		}
		if _, err := os.Lstat(cur); err == nil {
			return fault(p, sandbox.ErrNotDirectory, "")
		}
		return nil
	}
	return nil
}

// checkParent is __sg_pathfault: checkBlocked on p's parent.
func checkParent(p string) error { return checkBlocked(path.Dir(p), p) }

// isDir reports whether p is a directory or a symlink to one (bash's -d).
func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// checkNotDir is __sg_dirfault: ErrIsDirectory when p is a directory or a
// symlink to one.
func checkNotDir(p string) error {
	if isDir(p) {
		return fault(p, sandbox.ErrIsDirectory, "")
	}
	return nil
}

// checkReplaceable is __sg_unreplaceable: ErrNotReplaceable when p is a
// device node (not a symlink to one: a rename replaces a link's name) or a
// mount point, which rename(2) cannot replace (EBUSY) or would replace only
// in this mount namespace's view of the file.
func checkReplaceable(p string) error {
	fi, err := os.Lstat(p)
	if err != nil {
		return nil
	}
	if fi.Mode()&fs.ModeDevice != 0 {
		return fault(p, sandbox.ErrNotReplaceable, "device node")
	}
	if _, err := os.Stat(p); err != nil {
		return nil // a dangling symlink is replaced like a file
	}
	if isMountPoint(p) {
		return fault(p, sandbox.ErrNotReplaceable, "mount point")
	}
	return nil
}

// isMountPoint reports whether p's canonical form — its parent with every
// symlink resolved, its base name kept, so a final symlink is never
// followed — is a mount point of /proc/self/mountinfo (field 5, with the
// kernel's octal escapes decoded). An unreadable mountinfo answers false, as
// the script's does.
func isMountPoint(p string) bool {
	dir, err := filepath.EvalSymlinks(path.Dir(p))
	if err != nil {
		return false
	}
	canon := path.Join(dir, path.Base(p))
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && unescapeMount(fields[4]) == canon {
			return true
		}
	}
	return false
}

// mountEscapes are the octal escapes the kernel writes in mountinfo paths.
var mountEscapes = strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`)

func unescapeMount(s string) string { return mountEscapes.Replace(s) }

// mkdirs is __sg_mkdirs: `mkdir -p dir` with every directory it creates
// 0755 whatever the umask (each is chmodded, as `umask 022` does for the
// script; the agent cannot change its umask, which its commands inherit).
// A failure is ErrNotDirectory when a component is a non-directory (asked
// again: it may have appeared since the first walk), else not-writable with
// the strerror. Both name p, the path the caller asked for.
func mkdirs(dir, p string) error {
	if isDir(dir) {
		return nil
	}
	if err := mkdirs(path.Dir(dir), p); err != nil {
		return err
	}
	err := os.Mkdir(dir, 0o755)
	if err == nil {
		err = os.Chmod(dir, 0o755)
	}
	if err == nil || (errors.Is(err, fs.ErrExist) && isDir(dir)) {
		return nil
	}
	if blocked := checkBlocked(dir, p); blocked != nil {
		return blocked
	}
	return notWritable(p, err)
}
