#!/bin/bash
# exec-group-probe.sh: exits 0 when the process group $1 has a live member and
# 1 when it has none: `/bin/bash -c SCRIPT sandgate-probe PID`. It reads /proc
# instead of asking kill -0, which also counts zombies: under an init that never
# reaps, a killed group stays a group of zombies for good.
for f in /proc/[0-9]*/stat; do
	read -r s <"$f" || continue
	s=${s##*) }
	st=${s%% *}
	s=${s#* }
	s=${s#* }
	if [ "${s%% *}" = "$1" ] && [ "$st" != Z ] && [ "$st" != X ]; then exit 0; fi
done 2>/dev/null
exit 1
