#!/bin/bash
# sweep.sh: removes the stale temporaries of interrupted writes under the roots
# given as $2..., never crossing into /proc, /sys or /dev:
# `/bin/bash -c SCRIPT sandgate MINUTES ROOT...`. It removes regular files named
# exactly as the writes name their temporaries and the bulk plan's manifest and
# directory list (.sandgate-write- and 16 lower-case hex digits, optionally
# ".manifest" or ".dirs") and unmodified for more than MINUTES minutes. It
# prints each path it removes, one a line, and always exits 0: a directory the
# sandbox's user cannot read holds no temporary of its writes, and a sweep is
# best effort.
__sg_min=$1
shift
__sg_h='[0-9a-f]'
__sg_h=$__sg_h$__sg_h$__sg_h$__sg_h
__sg_h=$__sg_h$__sg_h$__sg_h$__sg_h
__sg_p=.sandgate-write-$__sg_h
find "$@" \( -path /proc -o -path /sys -o -path /dev \) -prune -o -type f \
	\( -name "$__sg_p" -o -name "$__sg_p.manifest" -o -name "$__sg_p.dirs" \) \
	-mmin +"$__sg_min" -print -exec rm -f -- {} + 2>/dev/null
exit 0
