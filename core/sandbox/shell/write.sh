#!/bin/bash
# write.sh: the single write, run after lib.sh as one exec,
# `/bin/bash -c SCRIPT sandgate TARGET TMP SIZE`, with the body on stdin. The
# adapter offers at most SIZE+1 bytes and then closes stdin; the script is the
# judge of the length: it reads exactly SIZE bytes into TMP and fails with 88 if
# fewer arrived or any byte follows, so a wrong length never lands.
#
# Order: path faults (82), a directory target (81), an unreplaceable target
# (84); parents made under umask 022 (85, or 82 on a race); the body copied
# into TMP (85 with the strerror: EROFS, EACCES, ENOSPC); the length check
# (88); then __sg_land: the mode kept, a directory that appeared meanwhile
# refused (81), and TMP renamed onto TARGET. Every failure removes TMP and
# drains stdin before exiting, so no residue is left and a refused body never
# blocks its sender.
# shellcheck shell=bash disable=SC2154 # runs after lib.sh (and bulk.sh), which define the __sg_/__sgb_ names
__sg_tmp=$2
__sg_abort() {
	[ "$1" = 0 ] && return 0
	rm -f -- "$__sg_tmp" 2>/dev/null
	cat >/dev/null
}
trap '__sg_abort $?' EXIT

__sg_pathfault "$1" -
__sg_dirfault "$1" -
__sg_unreplaceable "$1" -
__sg_mkdirs "${1%/*}" -
if ! __sg_e=$( { head -c "$3" >"$2"; } 2>&1); then
	__sg_fault 85 - "$(__sg_reason "$__sg_e")"
fi
__sg_n=$(stat -c %s -- "$2")
if [ "$__sg_n" != "$3" ]; then
	__sg_fault 88 - "short body: $__sg_n of $3 bytes"
fi
# A builtin read of one byte (a NUL counts too): no process for the check.
if IFS= read -r -d '' -n 1 _; then
	__sg_fault 88 - "long body: more than $3 bytes"
fi
__sg_land "$1" "$2" -
