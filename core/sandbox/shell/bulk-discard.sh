#!/bin/bash
# bulk-discard.sh: recovers from a delivery that failed (a PUT that broke half
# way, or any step an adapter could not finish): it removes every temporary
# file the manifest names and the bookkeeping, and always fails: 82 naming the
# member whose parent chain is blocked, if one is (a blocked parent is what a
# caller can act on), else 87.
# shellcheck shell=bash disable=SC2154 # runs after lib.sh (and bulk.sh), which define the __sg_/__sgb_ names
__sgb_shed=2
__sgb_blocked_members
for __sgb_x in "${__sgb_dirs[@]}"; do
	[[ $__sgb_x == /* ]] && __sg_blocked "$__sgb_x" -
done
__sg_fault 87 - "bulk delivery incomplete"
