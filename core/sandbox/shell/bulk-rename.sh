#!/bin/bash
# bulk-rename.sh: Docker's second exec, after every upload group was PUT. It
# checks that every temporary file arrived before it moves any (87 otherwise,
# landing nothing), then lands the members in order: a directory target (or a
# symlink to one) is 81, an existing regular target's mode is kept and a new
# file lands 0644, and the first failure stops the run, removes every temporary
# file not yet landed and the bookkeeping, and names that member. Members landed
# before it stay landed. Success removes the bookkeeping too.
# shellcheck shell=bash disable=SC2154 # runs after lib.sh (and bulk.sh), which define the __sg_/__sgb_ names
__sgb_shed=1
__sgb_land
