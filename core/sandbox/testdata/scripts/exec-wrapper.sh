if [ "$0" = sandgate-exec ] && read -r s 2>/dev/null </proc/$$/stat && s=${s##*) } && s=${s#* } && s=${s#* } &&
	[ "${s%% *}" != "$$" ] && command -v setsid >/dev/null; then
	exec setsid /bin/bash -c "$BASH_EXECUTION_STRING" sandgate-exec-leader "$@"
fi
if ! { printf 'sandgate-exec:%s\n' "$$" >&8; } 2>/dev/null; then printf 'sandgate-exec:%s\n' "$$" >&2; fi
exec 8>&-
if [ -n "$2" ]; then
	cd -- "$2" || exit 126
	unset OLDPWD
fi
w=$$
set -m
if [ "$1" = 0 ]; then
	{
	read -r _
	read -r s </proc/$BASHPID/stat || exit 0
	s=${s##*) }
	s=${s#* }
	[ "${s%% *}" = "$w" ] || exit 0
	kill -KILL -- "-$w" 2>/dev/null
	} >/dev/null 2>&1 &
	set +m
	exec /bin/bash -c "$3" </dev/null
fi
{
	trap '' PIPE
	read -r -t "$1" _
	if [ "$?" -le 128 ]; then kill -KILL -- "-$w" 2>/dev/null; exit 0; fi
	kill -0 -- "-$w" 2>/dev/null || exit 0
	printf 'sandgate: command exceeded its %s s deadline and was killed\n' "$1" >&2
	kill -KILL -- "-$w"
} >/dev/null &
d=$!
set +m
export SHLVL=$((SHLVL - 1))
exec 9>&2 2>/dev/null
/bin/bash -c "$3" </dev/null 2>&9 9>&-
rc=$?
kill -KILL -- "-$d"
exit "$rc"
