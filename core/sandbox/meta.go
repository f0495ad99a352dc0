package sandbox

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sandgate/sandgate/core/sandbox/shell"
)

// FileInfo describes one path as lstat(2) sees it: a symlink is described,
// never followed. Stat and List answer it on both data paths (the agent's
// and the scripts').
type FileInfo struct {
	// Name is the path asked for (Stat) or the entry's base name (List).
	Name string
	Type FileType
	// Size is lstat's: a symlink's is its target's length, a directory's
	// the filesystem's own figure.
	Size int64
	// Mode is the permission bits with setuid, setgid and sticky (07777).
	Mode uint32
	// ModTime is the modification time, in UTC.
	ModTime time.Time
	// LinkTarget is a symlink's target, unresolved; empty otherwise.
	LinkTarget string
}

// FileType is a FileInfo's kind of file.
type FileType string

// The kinds of FileInfo.Type; the strings are the agent's (core/agentwire)
// and the HTTP API's.
const (
	TypeFile    FileType = "file"
	TypeDir     FileType = "directory"
	TypeSymlink FileType = "symlink"
	// TypeOther is a FIFO, a socket or a device node.
	TypeOther FileType = "other"
)

// MaxListEntries bounds List: a directory with more entries is refused with
// ErrFileTooLarge rather than answered in part, so a listing is never
// silently incomplete. MaxListBytes bounds the answer's size the same way
// (names and link targets can be long).
const (
	MaxListEntries = 100_000
	MaxListBytes   = 32 << 20
)

// ErrTooManyEntries is List's refusal of a directory above MaxListEntries
// (or MaxListBytes). It matches ErrFileTooLarge, the sentinel a caller
// already maps to "too large" (HTTP 422).
var ErrTooManyEntries = fmt.Errorf("directory has more than %d entries or %d bytes of listing: %w",
	MaxListEntries, MaxListBytes, ErrFileTooLarge)

// CheckMetaPath validates the path of Stat, List and Mkdir: CheckFilePath,
// but "/" is a valid path there (stat and list of the root are fine; mkdir
// of it is an existing directory).
func CheckMetaPath(p string) error {
	if p == "/" {
		return nil
	}
	return CheckFilePath(p)
}

// CheckRemovePath validates Remove's path: CheckFilePath, and "/" is
// refused as invalid (not as ErrIsDirectory: no flag makes it removable).
// Nothing else is refused up front: a mount point fails with
// ErrNotReplaceable in the sandbox and the agent's read-only mount as not
// writable, and a tree the sandbox's user may remove with rm -rf it may
// remove here too.
func CheckRemovePath(p string) error {
	if p == "/" {
		return fmt.Errorf("path %q: refusing to remove the root", p)
	}
	return CheckFilePath(p)
}

// Each operation of meta.sh, its first argument.
const (
	metaStat   = "stat"
	metaList   = "list"
	metaRemove = "remove"
	metaMkdir  = "mkdir"
)

// StatArgs validates a stat and returns the argv of its exec:
// /bin/bash -c SCRIPT sandgate stat PATH, SCRIPT being shell.Meta. The
// adapter hands its stdout and outcome to ParseStat.
func StatArgs(p string) ([]string, error) {
	if err := CheckMetaPath(p); err != nil {
		return nil, err
	}
	return scriptArgv(shell.Meta, metaStat, p), nil
}

// ListArgs validates a list and returns the argv of its exec; the adapter
// captures at most MaxListBytes+1 bytes of stdout and hands them to
// ParseList.
func ListArgs(p string) ([]string, error) {
	if err := CheckMetaPath(p); err != nil {
		return nil, err
	}
	return scriptArgv(shell.Meta, metaList, p), nil
}

// RemoveArgs validates a remove and returns the argv of its exec; the
// adapter hands its outcome to ClassifyMeta.
func RemoveArgs(p string, recursive bool) ([]string, error) {
	if err := CheckRemovePath(p); err != nil {
		return nil, err
	}
	return scriptArgv(shell.Meta, metaRemove, p, flagArg(recursive)), nil
}

// MkdirArgs validates a mkdir and returns the argv of its exec; the
// adapter hands its outcome to ClassifyMeta.
func MkdirArgs(p string, parents bool) ([]string, error) {
	if err := CheckMetaPath(p); err != nil {
		return nil, err
	}
	return scriptArgv(shell.Meta, metaMkdir, p, flagArg(parents)), nil
}

func flagArg(on bool) string {
	if on {
		return "1"
	}
	return "0"
}

// ClassifyMeta maps the outcome of a meta.sh exec to nil or an error
// matching ErrFileNotExist, ErrNotDirectory, ErrIsDirectory (remove: a
// non-empty directory; mkdir: the directory exists), ErrNotReplaceable (a
// mount point), ErrNotReadable or ErrNotWritable (with the reason), naming
// p; any other non-zero exit is an unclassified error.
func ClassifyMeta(p string, exitCode int, stderr string) error {
	return classifyScript(exitCode, stderr, []string{p})
}

// ParseStat is Stat's last step on the fallback path: the outcome of the
// stat exec, its stdout one record.
func ParseStat(p string, exitCode int, stderr string, out []byte) (FileInfo, error) {
	if err := ClassifyMeta(p, exitCode, stderr); err != nil {
		return FileInfo{}, err
	}
	infos, err := parseRecords(out)
	if err == nil && len(infos) != 1 {
		err = fmt.Errorf("%d records, want 1", len(infos))
	}
	if err != nil {
		return FileInfo{}, fmt.Errorf("stat %q: %w", p, err)
	}
	infos[0].Name = p
	return infos[0], nil
}

// ParseList is List's last step on the fallback path: the outcome of the
// list exec, its stdout (truncated: more than MaxListBytes were printed)
// one record per entry. The entries come back sorted by name; more than
// MaxListEntries is ErrTooManyEntries.
func ParseList(p string, exitCode int, stderr string, out []byte, truncated bool) ([]FileInfo, error) {
	if err := ClassifyMeta(p, exitCode, stderr); err != nil {
		return nil, err
	}
	if truncated || len(out) > MaxListBytes {
		return nil, fmt.Errorf("list %q: %w", p, ErrTooManyEntries)
	}
	infos, err := parseRecords(out)
	if err != nil {
		return nil, fmt.Errorf("list %q: %w", p, err)
	}
	return SortList(p, infos)
}

// SortList sorts a listing by name and bounds it: every data path answers
// List through it. An empty directory is an empty, non-nil listing.
func SortList(p string, infos []FileInfo) ([]FileInfo, error) {
	if len(infos) > MaxListEntries {
		return nil, fmt.Errorf("list %q: %w", p, ErrTooManyEntries)
	}
	if infos == nil {
		infos = []FileInfo{}
	}
	slices.SortFunc(infos, func(a, b FileInfo) int { return strings.Compare(a.Name, b.Name) })
	return infos, nil
}

// recordFields is the number of NUL-terminated fields of one meta.sh record.
const recordFields = 6

// parseRecords reads meta.sh's records. The sandbox prints them, so
// nothing is trusted: a field count, type, number or name that is not what
// find prints is an error, never a guess.
func parseRecords(out []byte) ([]FileInfo, error) {
	if len(out) == 0 {
		return nil, nil
	}
	if out[len(out)-1] != 0 {
		return nil, fmt.Errorf("listing does not end with NUL")
	}
	fields := bytes.Split(out[:len(out)-1], []byte{0})
	if len(fields)%recordFields != 0 {
		return nil, fmt.Errorf("listing has %d fields, not records of %d", len(fields), recordFields)
	}
	infos := make([]FileInfo, 0, len(fields)/recordFields)
	for i := 0; i < len(fields); i += recordFields {
		fi, err := parseRecord(fields[i : i+recordFields])
		if err != nil {
			return nil, fmt.Errorf("record %d: %w", i/recordFields, err)
		}
		infos = append(infos, fi)
	}
	return infos, nil
}

func parseRecord(f [][]byte) (FileInfo, error) {
	fi := FileInfo{Type: findType(string(f[0])), LinkTarget: string(f[4]), Name: string(f[5])}
	size, err := strconv.ParseInt(string(f[1]), 10, 64)
	if err != nil || size < 0 {
		return FileInfo{}, fmt.Errorf("size %q", f[1])
	}
	mode, err := strconv.ParseUint(string(f[2]), 8, 32)
	if err != nil || mode > 0o7777 {
		return FileInfo{}, fmt.Errorf("mode %q", f[2])
	}
	mtime, err := parseMtime(string(f[3]))
	if err != nil {
		return FileInfo{}, err
	}
	if fi.Name == "" || strings.Contains(fi.Name, "/") && fi.Name != "/" {
		return FileInfo{}, fmt.Errorf("name %q", f[5])
	}
	if fi.Type != TypeSymlink {
		fi.LinkTarget = ""
	}
	fi.Size, fi.Mode, fi.ModTime = size, uint32(mode), mtime
	return fi, nil
}

// findType maps find's %y letter to a FileType.
func findType(y string) FileType {
	switch y {
	case "f":
		return TypeFile
	case "d":
		return TypeDir
	case "l":
		return TypeSymlink
	}
	return TypeOther
}

// parseMtime reads find's %T@, seconds and a fraction ("1701600000.1234567890"),
// to the nanosecond without a float's rounding.
func parseMtime(s string) (time.Time, error) {
	secs, frac, _ := strings.Cut(s, ".")
	sec, err := strconv.ParseInt(secs, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("mtime %q", s)
	}
	frac = (frac + "000000000")[:9]
	nsec, err := strconv.ParseInt(frac, 10, 64)
	if err != nil || nsec < 0 {
		return time.Time{}, fmt.Errorf("mtime %q", s)
	}
	if strings.HasPrefix(secs, "-") {
		nsec = -nsec
	}
	return time.Unix(sec, nsec).UTC(), nil
}
