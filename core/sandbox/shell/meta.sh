#!/bin/bash
# meta.sh: stat, list, remove and mkdir, run after lib.sh as one exec,
# `/bin/bash -c SCRIPT sandgate OP PATH [FLAG]`, OP one of stat, list, remove,
# mkdir and FLAG "1" for remove's recursive and mkdir's parents. Each answers
# lstat(2)'s view of PATH, as the agent's routes do (app/agent/meta.go):
#
# stat: a non-directory in the parent chain (82), a missing path (80; 89 when
# an ancestor cannot be searched), then one record of PATH itself, never
# following a final symlink.
# list: the same faults, then 82 when PATH is not a directory (a symlink to
# one is listed, as `ls` does; a dangling one is 80), 89 when it cannot be read or searched, then one
# record per entry, each lstat'ed, in the directory's order (the executor
# sorts them and bounds their count).
# remove: the same faults, then a file or symlink (never followed) with
# `rm -f`, a directory with `rmdir`, or with `rm -rf` when FLAG is 1; a
# non-empty directory is 81, a mount point 84, anything else 85 with the
# reason; a path gone meanwhile is success.
# mkdir: 82 when PATH or an ancestor is a non-directory (a dangling symlink
# too); an existing directory is success with FLAG 1 (mkdir -p) and 81
# without; without FLAG a missing parent is 80; then lib.sh's __sg_mkdirs
# (0755 whatever the umask).
#
# A record is six NUL-terminated fields, so no name or link target (which may
# hold newlines or any byte but NUL) can forge one: type (find's %y letter),
# size, mode (octal, with setuid, setgid, sticky), mtime (seconds.fraction),
# link target (empty unless a symlink), base name. GNU find's -printf writes
# them, or __sg_records where find has no -printf; core/sandbox's
# ParseStat and ParseList read them.
# shellcheck shell=bash disable=SC2154 # runs after lib.sh, which defines the __sg_ names

# __sg_absent PATH: PATH does not lstat: 89 when the walk down to it meets a
# directory the user cannot search (the kernel's EACCES), else 80.
__sg_absent() {
	local rest=${1#/} p=
	[ -x / ] || __sg_fault 89 - "Permission denied"
	while [ -n "$rest" ]; do
		p=$p/${rest%%/*}
		case $rest in */*) rest=${rest#*/} ;; *) rest= ;; esac
		if [ -z "$rest" ] || [ ! -d "$p" ]; then
			break
		fi
		[ -x "$p" ] || __sg_fault 89 - "Permission denied"
	done
	__sg_fault 80 - "No such file or directory"
}

# __sg_exists PATH: the faults every OP but mkdir answers first.
__sg_exists() {
	__sg_pathfault "$1" -
	if [ ! -e "$1" ] && [ ! -L "$1" ]; then
		__sg_absent "$1"
	fi
	return 0
}

# __sg_records PATH...: the records of PATHs without GNU find (busybox's has
# no -printf): bash's tests for the type, one stat for size, mode and mtime
# (whole seconds; stat never follows a symlink without -L), one readlink per
# symlink. Slower per entry, the same records.
__sg_records() {
	local e t n sz md mt
	for e in "$@"; do
		if [ -L "$e" ]; then t=l; elif [ -d "$e" ]; then t=d; elif [ -f "$e" ]; then t=f; else t=o; fi
		read -r sz md mt < <(stat -c '%s %a %Y' -- "$e") || return 1
		n=${e##*/}
		printf '%s\0%s\0%s\0%s\0%s\0%s\0' "$t" "$sz" "$md" "$mt" "$([ "$t" = l ] && readlink -- "$e")" "${n:-/}"
	done
}

__sg_fmt='%y\0%s\0%#m\0%T@\0%l\0%f\0'
__sg_gnu=1
find / -maxdepth 0 -printf '' >/dev/null 2>&1 || __sg_gnu=

case $1 in
stat)
	__sg_exists "$2"
	[ -n "$__sg_gnu" ] || { __sg_records "$2"; exit; }
	exec find -P "$2" -maxdepth 0 -printf "$__sg_fmt"
	;;
list)
	__sg_exists "$2"
	if [ ! -d "$2" ]; then
		if [ -L "$2" ] && [ ! -e "$2" ]; then
			__sg_fault 80 - "No such file or directory"
		fi
		__sg_fault 82 - "Not a directory"
	fi
	if [ ! -r "$2" ] || [ ! -x "$2" ]; then
		__sg_fault 89 - "Permission denied"
	fi
	if [ -z "$__sg_gnu" ]; then
		shopt -s dotglob nullglob
		__sg_records "${2%/}"/*
		exit
	fi
	exec find -H "$2" -mindepth 1 -maxdepth 1 -printf "$__sg_fmt"
	;;
remove)
	__sg_exists "$2"
	if [ -d "$2" ] && [ ! -L "$2" ]; then
		if [ "${3-}" = 1 ]; then
			__sg_e=$(rm -rf -- "$2" 2>&1) && exit 0
		else
			__sg_e=$(rmdir -- "$2" 2>&1) && exit 0
		fi
	else
		__sg_e=$(rm -f -- "$2" 2>&1) && exit 0
	fi
	case $__sg_e in
	*"Directory not empty"*) __sg_fault 81 - "Directory not empty" ;;
	*"Device or resource busy"*) __sg_fault 84 - "mount point" ;;
	esac
	if [ ! -e "$2" ] && [ ! -L "$2" ]; then
		exit 0
	fi
	__sg_fault 85 - "$(__sg_reason "$__sg_e")"
	;;
mkdir)
	__sg_blocked "$2" -
	if [ -d "$2" ]; then
		[ "${3-}" = 1 ] && exit 0
		__sg_fault 81 - "File exists"
	fi
	if [ "${3-}" != 1 ]; then
		__sg_d=${2%/*}
		[ -d "${__sg_d:-/}" ] || __sg_fault 80 - "No such file or directory"
	fi
	__sg_mkdirs "$2" -
	;;
*)
	exit 2
	;;
esac
