package sandbox

import "strconv"

// A staged write is WriteScript split in two around a transfer that does not
// go through the exec's stdin — Docker's archive PUT, several times faster
// than an exec's stdin for a large body. StagePrepare answers the path
// faults, makes the parents and creates TMP as the sandbox's user (so a path
// that is not writable is refused, with its strerror, before a byte
// travels); the transfer then replaces TMP's content; StageLand checks the
// length and lands TMP exactly as WriteScript does. StageDiscard removes TMP
// after a transfer that failed. Every failure of the two scripts removes TMP
// (through a global: inside the EXIT trap of an exit called from a function,
// "$2" would be the function's argument).
const (
	StagePrepareScript = ShellLib + stagePrepareBody
	StageLandScript    = ShellLib + stageLandBody
	StageDiscardScript = `rm -f -- "$1"`
)

const stagePrepareBody = `
__sg_tmp=$2
trap '[ $? = 0 ] || rm -f -- "$__sg_tmp" 2>/dev/null' EXIT
__sg_pathfault "$1" -
__sg_dirfault "$1" -
__sg_unreplaceable "$1" -
__sg_mkdirs "${1%/*}" -
if ! __sg_e=$( { : >"$2"; } 2>&1); then
	__sg_fault 85 - "$(__sg_reason "$__sg_e")"
fi
`

const stageLandBody = `
__sg_tmp=$2
trap '[ $? = 0 ] || rm -f -- "$__sg_tmp" 2>/dev/null' EXIT
if ! __sg_n=$(stat -c %s -- "$2" 2>/dev/null); then
	__sg_fault 88 - "the body never arrived"
fi
if [ "$__sg_n" != "$3" ]; then
	__sg_fault 88 - "body of $__sg_n bytes, want $3"
fi
__sg_land "$1" "$2" -
`

// StageArgs validates a staged write and returns the argv of its three
// scripts, which share one fresh TempName beside target: prepare and land
// go to their execs, discard to the recovery exec after a failed transfer.
// Classify their outcome with ClassifyWrite.
func StageArgs(target string, size int64) (prepare, land, discard []string, err error) {
	if err := CheckFilePath(target); err != nil {
		return nil, nil, nil, err
	}
	if err := CheckWriteSize(size); err != nil {
		return nil, nil, nil, err
	}
	tmp := TempName(target)
	return scriptArgv(StagePrepareScript, target, tmp),
		scriptArgv(StageLandScript, target, tmp, strconv.FormatInt(size, 10)),
		scriptArgv(StageDiscardScript, tmp), nil
}
