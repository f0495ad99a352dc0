#!/bin/bash
# bulk-oneshot.sh: the whole batch in one exec (Kubernetes), with the whole
# archive on stdin: it unpacks the bookkeeping (the first PREFIX bytes),
# prepares as bulk-prepare.sh does, extracts the members with `tar -x -C /` (a
# failed or short extraction discards everything: 82 for a blocked parent, 85
# for a refused write, else 87), and lands them as bulk-rename.sh does. It may
# refuse before reading all of stdin, and then reads the rest (__sgb_drain);
# its exit code is the verdict.
# shellcheck shell=bash disable=SC2154 # runs after lib.sh (and bulk.sh), which define the __sg_/__sgb_ names
__sgb_shed=1 __sgb_drain=1
__sgb_unpack
__sgb_prepare
__sgb_extract_rest
__sgb_land
