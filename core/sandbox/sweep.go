package sandbox

import (
	"strconv"
	"strings"
	"time"

	"github.com/sandgate/sandgate/core/sandbox/shell"
)

// DefaultStaleTempAge is how long a temporary of ours must have gone
// unmodified before a sweep removes it. A live write modifies its temporary
// as its bytes arrive (the single-write script's head, the daemon's archive
// extraction), and the API ends a body that stalls long before this, so a
// temporary this old has no writer left: its executor died mid-write
// (kill -9, a crash) before the script or the discard could remove it. A
// concurrent write's temporary, however slow, is younger and kept.
const DefaultStaleTempAge = 10 * time.Minute

// SweepArgs is the argv of a sweep of roots for temporaries older than age
// (rounded up to whole minutes, at least one: find's unit). Its script,
// shell.Sweep (sweep.sh), removes the regular files named as tempName and
// the bulk plan name their temporaries, prints each path it removes and
// always exits 0.
func SweepArgs(age time.Duration, roots ...string) []string {
	minutes := int64((age + time.Minute - 1) / time.Minute)
	if minutes < 1 {
		minutes = 1
	}
	return scriptArgv(shell.Sweep, append([]string{strconv.FormatInt(minutes, 10)}, roots...)...)
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
		err = classifyScript(code, stderr, nil)
	}
	if err != nil {
		return 0, err
	}
	return strings.Count(out.String(), "\n"), nil
}
