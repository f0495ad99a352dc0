#!/bin/bash
# read.sh: the read, run after lib.sh as one exec,
# `/bin/bash -c SCRIPT sandgate PATH MAXBYTES [stat]`. It answers, in order: a
# non-directory in the parent chain (82); a missing path (80, but a dangling
# symlink is a symlink); a directory or a symlink to one (81, as a symlink to a
# directory is to every question asked of a path); any other symlink, never
# followed, even to a regular file (83); a FIFO, socket or device (83); a file
# above MAXBYTES (86, before any byte is sent). Then it prints the header line
# "<size>\n" on stdout followed by exactly size bytes of the file, or stops
# after the header when the third argument is "stat" (the bytes then travel
# another way).
#
# The file is opened once, after the type checks (opening a FIFO would block),
# and both the size and the bytes come from that open file, so a file growing
# meanwhile never sends more than its header says. A file the sandbox's user
# cannot open (a non-root user and a 0600 file of root's) fails before the
# header with 89 and the strerror ("Permission denied"): the open is tried
# again in a subshell only to capture its message, so the reason is the
# kernel's and never a guess.
# shellcheck shell=bash disable=SC2154 # runs after lib.sh (and bulk.sh), which define the __sg_/__sgb_ names
__sg_pathfault "$1" -
if [ ! -e "$1" ] && [ ! -L "$1" ]; then
	__sg_fault 80 - "No such file or directory"
fi
__sg_dirfault "$1" -
if [ -L "$1" ]; then
	__sg_fault 83 - "symbolic link"
fi
if [ ! -f "$1" ]; then
	__sg_fault 83 - "not a regular file"
fi
if ! { exec 3<"$1"; } 2>/dev/null; then
	__sg_e=$( { : <"$1"; } 2>&1 )
	__sg_fault 89 - "$(__sg_reason "$__sg_e")"
fi
__sg_n=$(stat -c %s - <&3) || exit 1
if [ "$__sg_n" -gt "$2" ]; then
	__sg_fault 86 - "$__sg_n bytes, above $2"
fi
printf '%s\n' "$__sg_n"
[ "${3-}" = stat ] && exit 0
exec head -c "$__sg_n" <&3 3<&-
