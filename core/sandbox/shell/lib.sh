#!/bin/bash
# lib.sh: the function library every in-sandbox file script (single writes,
# reads, bulk writes) starts with, so the path questions are asked the same way
# on both backends and by every script. It defines no variables a script relies
# on besides the locale, and runs nothing but its preamble.
#
# The preamble sets LC_ALL=C, so the strerror texts that __sg_reason lifts out
# of a tool's message are the C locale's ("Read-only file system"), and unsets
# CDPATH, which would make `cd` print and wander.
#
# Conventions, because the sandbox is hostile: every path arrives as an
# argument and is only ever expanded inside double quotes, after `--`; no
# function is ever called inside a command substitution when it may fault,
# since `exit` there would leave only the subshell. INDEX is the member index a
# marker names, or "-" for a single operation (see doc.go for the exit codes).
export LC_ALL=C
unset CDPATH

# __sg_fault CODE INDEX REASON: print the marker line
# sandgate-fault:CODE:INDEX:REASON to stderr (newlines in REASON become spaces,
# so the marker stays one line) and exit CODE.
__sg_fault() {
	local r=$3
	r=${r//$'\n'/ }
	r=${r//$'\r'/ }
	printf 'sandgate-fault:%s:%s:%s\n' "$1" "$2" "$r" >&2
	exit "$1"
}

# __sg_reason MESSAGE: print the strerror part of a tool's message: the text
# after the last ": " of its last line. It covers coreutils ("mkdir: cannot
# create directory 'x': Read-only file system") and bash redirections ("bash:
# line 1: /x: Permission denied"); a file name that itself holds ": " or a
# newline comes before the part that is kept.
__sg_reason() {
	local m=$1
	while [[ $m == *$'\n' ]]; do m=${m%$'\n'}; done
	m=${m##*$'\n'}
	printf '%s' "${m##*: }"
}

# __sg_blocked DIR INDEX: fault 82 if DIR or any of its ancestors exists and is
# not a directory (a dangling symlink is not one; a symlink to a directory is).
# A missing component ends the walk: mkdir creates the rest.
__sg_blocked() {
	local rest=${1#/} p=
	while [ -n "$rest" ]; do
		p=$p/${rest%%/*}
		case $rest in */*) rest=${rest#*/} ;; *) rest= ;; esac
		[ -d "$p" ] && continue
		if [ -e "$p" ] || [ -L "$p" ]; then
			__sg_fault 82 "$2" "Not a directory"
		fi
		return 0
	done
	return 0
}

# __sg_pathfault PATH INDEX: __sg_blocked on PATH's parent, i.e. ENOTDIR at any
# depth of the parent chain.
__sg_pathfault() {
	__sg_blocked "${1%/*}" "$2"
}

# __sg_dirfault PATH INDEX: fault 81 if PATH is a directory or a symlink to one.
__sg_dirfault() {
	if [ -d "$1" ]; then
		__sg_fault 81 "$2" "Is a directory"
	fi
	return 0
}

# __sg_unreplaceable PATH INDEX: fault 84 if PATH is a device node (not a
# symlink to one: a rename replaces a link's name) or a mount point. The mount
# check compares PATH's canonical form (the parent resolved with `cd -P`, the
# base name kept, so a symlink is never followed) with field 5 of
# /proc/self/mountinfo, decoding the kernel's \040 \011 \012 \134.
__sg_unreplaceable() {
	if [ ! -L "$1" ] && { [ -b "$1" ] || [ -c "$1" ]; }; then
		__sg_fault 84 "$2" "device node"
	fi
	[ -e "$1" ] && [ -r /proc/self/mountinfo ] || return 0
	local dir=${1%/*} canon mp _ found=
	canon=$(cd -P -- "${dir:-/}" 2>/dev/null && pwd -P && printf .) || return 0
	canon=${canon%$'\n.'}
	canon=${canon%/}/${1##*/}
	while read -r _ _ _ _ mp _; do
		mp=${mp//\\040/ }
		mp=${mp//\\011/$'\t'}
		mp=${mp//\\012/$'\n'}
		mp=${mp//\\134/\\}
		if [ "$mp" = "$canon" ]; then
			found=1
			break
		fi
	done </proc/self/mountinfo
	# The fault is raised outside the loop: inside it stdin is mountinfo, and
	# the exit trap that drains the body would drain mountinfo instead.
	[ -z "$found" ] || __sg_fault 84 "$2" "mount point"
	return 0
}

# __sg_mkdirs DIR INDEX: `mkdir -p` DIR under umask 022 (new directories 0755);
# a failure is 82 when a component is a non-directory (walked again: it may
# have appeared since the first walk) and otherwise 85 with the reason.
__sg_mkdirs() {
	local e
	[ -d "${1:-/}" ] && return 0
	e=$(umask 022 && mkdir -p -- "${1:-/}" 2>&1) && return 0
	__sg_blocked "$1" "$2"
	__sg_fault 85 "$2" "$(__sg_reason "$e")"
}

# __sg_keepmode TARGET TMP INDEX: chmod TMP to TARGET's mode when TARGET is an
# existing regular file and not a symlink, else to 0644, so a new file's bits
# do not depend on the image's umask or a default ACL. A failing chmod is 85
# with the reason.
__sg_keepmode() {
	local m=0644 e
	if [ -f "$1" ] && [ ! -L "$1" ]; then
		m=$(stat -c %a -- "$1" 2>/dev/null) || m=0644
	fi
	chmod -- "$m" "$2" 2>/dev/null && return 0
	e=$(chmod -- "$m" "$2" 2>&1) || __sg_fault 85 "$3" "$(__sg_reason "$e")"
	return 0
}

# __sg_land TARGET TMP INDEX: keep the mode, refuse a directory target (which
# may have appeared while the bytes travelled) with 81, then `mv -fT` TMP onto
# TARGET (-T: a rename never moves *into* a directory). A failed rename is
# classified again: 82, 81, else 85 with the reason.
__sg_land() {
	local e
	__sg_keepmode "$1" "$2" "$3"
	__sg_dirfault "$1" "$3"
	mv -fT -- "$2" "$1" 2>/dev/null && return 0
	e=$(mv -fT -- "$2" "$1" 2>&1) && return 0
	__sg_pathfault "$1" "$3"
	__sg_dirfault "$1" "$3"
	__sg_fault 85 "$3" "$(__sg_reason "$e")"
}
