#!/bin/bash
# stage-land.sh: the second half of a staged write, after lib.sh:
# `/bin/bash -c SCRIPT sandgate TARGET TMP SIZE`. See stage-prepare.sh.
# shellcheck shell=bash disable=SC2154 # runs after lib.sh (and bulk.sh), which define the __sg_/__sgb_ names
__sg_tmp=$2
trap '[ $? = 0 ] || rm -f -- "$__sg_tmp" 2>/dev/null' EXIT
if ! __sg_n=$(stat -c %s -- "$2" 2>/dev/null); then
	__sg_fault 88 - "the body never arrived"
fi
if [ "$__sg_n" != "$3" ]; then
	__sg_fault 88 - "body of $__sg_n bytes, want $3"
fi
__sg_land "$1" "$2" -
