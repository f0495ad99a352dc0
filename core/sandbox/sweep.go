package sandbox

import (
	"strconv"
	"strings"
	"time"
)

// DefaultStaleTempAge is how long a temporary of ours must have gone
// unmodified before a sweep removes it. A live write modifies its temporary
// as its bytes arrive (the single-write script's head, the daemon's archive
// extraction), and the API ends a body that stalls long before this, so a
// temporary this old has no writer left: its executor died mid-write
// (kill -9, a crash) before the script or the discard could remove it. A
// concurrent write's temporary, however slow, is younger and kept.
const DefaultStaleTempAge = 10 * time.Minute

// SweepScript removes the stale temporaries of interrupted writes under the
// roots given as $2…, never crossing into /proc, /sys or /dev: regular files
// named exactly as TempName and the bulk plan's manifest and directory list
// name them (TempPrefix and 16 lower-case hex digits, optionally ".manifest"
// or ".dirs") and unmodified for more than $1 minutes. It prints each path it
// removes, one a line, and always exits 0: a directory the sandbox's user
// cannot read holds no temporary of its writes, and a sweep is best effort.
const SweepScript = `__sg_min=$1
shift
__sg_h='[0-9a-f]'
__sg_h=$__sg_h$__sg_h$__sg_h$__sg_h
__sg_h=$__sg_h$__sg_h$__sg_h$__sg_h
__sg_p=` + TempPrefix + `$__sg_h
find "$@" \( -path /proc -o -path /sys -o -path /dev \) -prune -o -type f \
	\( -name "$__sg_p" -o -name "$__sg_p.manifest" -o -name "$__sg_p.dirs" \) \
	-mmin +"$__sg_min" -print -exec rm -f -- {} + 2>/dev/null
exit 0
`

// SweepArgs is the argv of a sweep of roots for temporaries older than age
// (rounded up to whole minutes, at least one: find's unit).
func SweepArgs(age time.Duration, roots ...string) []string {
	minutes := int64((age + time.Minute - 1) / time.Minute)
	if minutes < 1 {
		minutes = 1
	}
	return scriptArgv(SweepScript, append([]string{strconv.FormatInt(minutes, 10)}, roots...)...)
}

// SweepTimeout bounds one sweep: it walks the sandbox's filesystem, and an
// adoption must not wait on a huge tree for long.
const SweepTimeout = 20 * time.Second

// Sweep runs a sweep of the whole sandbox for temporaries older than age
// through run — an adapter's way of running one of the core's scripts to
// completion, stdout into a capture — and returns how many it removed.
func Sweep(age time.Duration, run func(argv []string, out *Capture) (code int, stderr string, err error)) (int, error) {
	out := NewCapture(64 << 10)
	code, stderr, err := run(SweepArgs(age, "/"), out)
	if err == nil && code != 0 {
		err = ClassifyScript(code, stderr, nil)
	}
	if err != nil {
		return 0, err
	}
	return strings.Count(out.String(), "\n"), nil
}
