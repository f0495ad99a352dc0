#!/bin/bash
# bulk-prepare.sh: Docker's first exec, run before the archive PUT with the
# archive's bookkeeping prefix on stdin. It unpacks the manifest and dir list
# into the workdir, refuses a blocked parent anywhere in the batch before
# anything is made (82 naming the lowest such member), then creates every
# missing parent directory (new ones 0755) as the sandbox's user and checks that
# the existing ones let that user create files (85 with the strerror text,
# naming the lowest member that meets the failure). Its work is per directory,
# never per member. A failure removes the bookkeeping; success leaves it for the
# PUT and bulk-rename.sh.
# shellcheck shell=bash disable=SC2154 # runs after lib.sh (and bulk.sh), which define the __sg_/__sgb_ names
__sgb_shed=1
__sgb_unpack
__sgb_prepare
__sgb_shed=0
