#!/bin/bash
# stage-prepare.sh: the first half of a staged write, after lib.sh:
# `/bin/bash -c SCRIPT sandgate TARGET TMP`.
#
# A staged write is write.sh split in two around a transfer that does not go
# through the exec's stdin (Docker's archive PUT, several times faster than an
# exec's stdin for a large body). stage-prepare.sh answers the path faults,
# makes the parents and creates TMP as the sandbox's user (so a path that is not
# writable is refused, with its strerror, before a byte travels); the transfer
# then replaces TMP's content; stage-land.sh checks the length and lands TMP
# exactly as write.sh does. stage-discard.sh removes TMP after a transfer that
# failed. Every failure of the first two removes TMP (through a global: inside
# the EXIT trap of an exit called from a function, "$2" would be the function's
# argument).
# shellcheck shell=bash disable=SC2154 # runs after lib.sh (and bulk.sh), which define the __sg_/__sgb_ names
__sg_tmp=$2
trap '[ $? = 0 ] || rm -f -- "$__sg_tmp" 2>/dev/null' EXIT
__sg_pathfault "$1" -
__sg_dirfault "$1" -
__sg_unreplaceable "$1" -
__sg_mkdirs "${1%/*}" -
if ! __sg_e=$( { : >"$2"; } 2>&1); then
	__sg_fault 85 - "$(__sg_reason "$__sg_e")"
fi
