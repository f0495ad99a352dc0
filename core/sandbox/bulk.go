package sandbox

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sandgate/sandgate/core/domain"
)

// BulkWrite is the plan of one WriteFiles batch (C-BULK-1..3): where every
// member's bytes land before their rename, the bookkeeping files the
// in-sandbox scripts read, the archive that carries it all, and the commands
// that prepare, land and discard it. PlanBulk makes one; it holds the members'
// Data slices without copying them, so the caller must not change them until
// the archive has been written.
//
// Member i lands first under tempNameN(target, nonce+i), CONTRACT §0's
// temporary name: <dir of target>/.sandgate-write-<16 hex>, beside its target,
// so landing it is one rename in one directory and the scripts create nothing
// per member (a staging directory per run of members cost a mkdir and an
// rmdir each, and one per member when members alternate between
// directories).
//
// The flow: Docker runs PrepareCmd (stdin WritePrefix), PUTs each Uploads
// group (WriteUpload), then runs RenameCmd, or DiscardCmd when a PUT failed;
// Kubernetes runs OneShotCmd with WriteArchive on stdin. Classify reads every
// script's exit.
type BulkWrite struct {
	// Manifest names the file listing `tmp\0target\0` for every member, and
	// DirList the deduplicated parent directories. Both land in the workdir,
	// which exists, and both are the archive's first entries — so a delivery that
	// fails on a later one has still landed what the recovery pass needs. The
	// rename script removes them.
	Manifest string
	DirList  string

	members   []bulkMember
	dirs      []string
	manifest  []byte
	dirList   []byte
	prefixLen int64
	// mtime is every archive entry's modification time: PlanBulk's clock,
	// so a member lands carrying the time it was written without a utime
	// call per member (Docker's daemon keeps an entry's mtime; tar -m in
	// OneShotCmd sets the extraction's). Golden plans keep the Unix epoch.
	mtime time.Time
}

// bulkMember is one planned member.
type bulkMember struct {
	target string
	temp   string
	data   []byte
}

// bulkPlanTries bounds PlanBulk's draws of a nonce.
const bulkPlanTries = 4

// errNonceCollision reports a member path equal to (or under) one of the
// batch's own temporary names. It needs the random nonce guessed, so PlanBulk
// draws another nonce rather than failing.
var errNonceCollision = errors.New("collides with the batch's temporary names")

// PlanBulk validates a WriteFiles batch and plans it for workdir (empty means
// DefaultWorkdir), with a fresh random nonce and the current time (whole
// seconds) as the archive entries' mtime. An empty batch returns a nil plan
// and a nil error: there is nothing to do and the sandbox must not be
// touched. Every member path must pass CheckFilePath (absolute, clean, not
// "/", free of NUL, at most 4095 bytes); a member whose parent is another
// member's target is refused with ErrNotDirectory, since one of the two
// would be blocked by the other. Errors name the member's index and path;
// nothing reaches the sandbox on an error.
func PlanBulk(workdir string, files []FileWrite) (*BulkWrite, error) {
	var err error
	for range bulkPlanTries {
		var b *BulkWrite
		b, err = planBulk(workdir, files, randomNonce())
		if !errors.Is(err, errNonceCollision) {
			if b != nil {
				b.mtime = time.Now().Truncate(time.Second)
			}
			return b, err
		}
	}
	return nil, err
}

// planBulk is PlanBulk with the nonce given and the epoch as the entries'
// mtime, so golden tests are deterministic.
func planBulk(workdir string, files []FileWrite, nonce uint64) (*BulkWrite, error) {
	if len(files) == 0 {
		return nil, nil
	}
	if workdir == "" {
		workdir = DefaultWorkdir
	}
	if workdir != "/" {
		if err := CheckFilePath(workdir); err != nil {
			return nil, fmt.Errorf("workdir: %w", err)
		}
	}
	for i, f := range files {
		if err := CheckFilePath(f.Path); err != nil {
			return nil, fmt.Errorf("files[%d]: %w", i, err)
		}
	}
	b := &BulkWrite{members: make([]bulkMember, len(files)), mtime: bulkEpoch}
	base := fmt.Sprintf("%s%016x", TempPrefix, nonce)
	b.Manifest = path.Join(workdir, base+".manifest")
	b.DirList = path.Join(workdir, base+".dirs")
	for i, f := range files {
		b.members[i] = bulkMember{target: f.Path, temp: tempNameN(f.Path, nonce+uint64(i)), data: f.Data}
	}
	if err := b.checkConflicts(); err != nil {
		return nil, err
	}
	b.manifest = b.buildManifest()
	b.dirs = b.buildDirs()
	b.dirList = joinNUL(b.dirs)
	n, err := b.countPrefix()
	if err != nil {
		return nil, fmt.Errorf("bulk write: archive bookkeeping: %w", err)
	}
	b.prefixLen = n
	return b, nil
}

// checkConflicts refuses a member whose parent chain holds another member's
// target (one of the two must fail, so the batch is refused before anything
// lands, like any blocked parent), and one that meets the batch's own
// temporary names.
func (b *BulkWrite) checkConflicts() error {
	targets := make(map[string]int, len(b.members))
	ours := map[string]bool{b.Manifest: true, b.DirList: true}
	for i, m := range b.members {
		if _, dup := targets[m.target]; !dup {
			targets[m.target] = i
		}
		ours[m.temp] = true
	}
	for i, m := range b.members {
		if ours[m.target] {
			return fmt.Errorf("files[%d].path %q: %w", i, domain.ClipTo(m.target, 256), errNonceCollision)
		}
		for p := path.Dir(m.target); p != "/"; p = path.Dir(p) {
			if j, ok := targets[p]; ok {
				return fmt.Errorf("files[%d].path %q: parent %q is files[%d], written as a file: %w",
					i, domain.ClipTo(m.target, 256), domain.ClipTo(p, 256), j, ErrNotDirectory)
			}
			if ours[p] {
				return fmt.Errorf("files[%d].path %q: %w", i, domain.ClipTo(m.target, 256), errNonceCollision)
			}
		}
	}
	return nil
}

// buildManifest lists `tmp\0target\0` for every member in order.
func (b *BulkWrite) buildManifest() []byte {
	n := 0
	for _, m := range b.members {
		n += len(m.temp) + len(m.target) + 2
	}
	out := make([]byte, 0, n)
	for _, m := range b.members {
		out = append(out, m.temp...)
		out = append(out, 0)
		out = append(out, m.target...)
		out = append(out, 0)
	}
	return out
}

// buildDirs is the sorted, deduplicated list of the targets' parents.
func (b *BulkWrite) buildDirs() []string {
	dirs := make([]string, 0, 16)
	for _, m := range b.members {
		dirs = append(dirs, path.Dir(m.target))
	}
	slices.Sort(dirs)
	return slices.Compact(dirs)
}

// joinNUL ends every element with a NUL.
func joinNUL(list []string) []byte {
	var sb strings.Builder
	for _, s := range list {
		sb.WriteString(s)
		sb.WriteByte(0)
	}
	return []byte(sb.String())
}

// Len is the number of members.
func (b *BulkWrite) Len() int { return len(b.members) }

// Paths returns the members' targets in order, the list Classify names a
// member from.
func (b *BulkWrite) Paths() []string {
	out := make([]string, len(b.members))
	for i, m := range b.members {
		out[i] = m.target
	}
	return out
}

// Temps returns the members' temporary names, in the order of Paths.
func (b *BulkWrite) Temps() []string {
	out := make([]string, len(b.members))
	for i, m := range b.members {
		out[i] = m.temp
	}
	return out
}

// Classify maps the exit code and stderr of any of the plan's scripts to an
// error: nil for 0, the protocol's sentinel otherwise (errors.Is works),
// wrapped with the failing member's path when the marker names a member of
// this batch. A marker index outside the batch names no member. A
// not-writable fault that names no member is about the batch as a whole (the
// workdir refused the bookkeeping, or the disk filled during the one-shot
// extraction): its *PathNotWritableError carries the workdir.
func (b *BulkWrite) Classify(exitCode int, stderr string) error {
	paths := b.Paths()
	if f, ok := parseFault(stderr); !ok || f.Code != exitCode || f.Member < 0 || f.Member >= len(paths) {
		// Only a usable marker names a member: classifyScript would name a
		// lone path without one, and a bulk fault naming no member is about
		// the batch (its bookkeeping, its delivery), not about that path.
		paths = nil
	}
	err := classifyScript(exitCode, stderr, paths)
	var nw *PathNotWritableError
	if errors.As(err, &nw) && nw.Path == "" {
		nw.Path = path.Dir(b.Manifest)
	}
	return err
}

// argv is `/bin/bash -c SCRIPT sandgate MANIFEST DIRLIST N D PREFIX`, the
// one argument list every bulk script takes; no path is ever part of the
// script text.
func (b *BulkWrite) argv(script string) []string {
	return scriptArgv(script, b.Manifest, b.DirList,
		strconv.Itoa(len(b.members)), strconv.Itoa(len(b.dirs)), strconv.FormatInt(b.prefixLen, 10))
}

// FileWrite is one member of a WriteFiles batch. Path must be absolute and
// clean.
type FileWrite struct {
	Path string
	Data []byte
}
