package sandbox

import (
	"strconv"

	"github.com/sandgate/sandgate/core/sandbox/shell"
)

// A staged write is the single write split in two around a transfer that
// does not go through the exec's stdin (Docker's archive PUT, several times
// faster than an exec's stdin for a large body): shell.StagePrepare answers
// the path faults and creates TMP as the sandbox's user before a byte
// travels, the transfer replaces TMP's content, shell.StageLand checks the
// length and lands TMP; shell.StageDiscard removes TMP after a transfer that
// failed (stage-*.sh).

// StageArgs validates a staged write and returns the argv of its three
// scripts, which share one fresh tempName beside target: prepare and land
// go to their execs, discard to the recovery exec after a failed transfer.
// Classify their outcome with ClassifyWrite.
func StageArgs(target string, size int64) (prepare, land, discard []string, err error) {
	if err := CheckFilePath(target); err != nil {
		return nil, nil, nil, err
	}
	if err := CheckWriteSize(size); err != nil {
		return nil, nil, nil, err
	}
	tmp := tempName(target)
	return scriptArgv(shell.StagePrepare, target, tmp),
		scriptArgv(shell.StageLand, target, tmp, strconv.FormatInt(size, 10)),
		scriptArgv(shell.StageDiscard, tmp), nil
}
