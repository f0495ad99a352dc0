for f in /proc/[0-9]*/stat; do
	read -r s <"$f" || continue
	s=${s##*) }
	st=${s%% *}
	s=${s#* }
	s=${s#* }
	if [ "${s%% *}" = "$1" ] && [ "$st" != Z ] && [ "$st" != X ]; then exit 0; fi
done 2>/dev/null
exit 1
