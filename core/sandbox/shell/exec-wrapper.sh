#!/bin/bash
# exec-wrapper.sh: the wrapper W that runs every command, as the main process
# of one exec:
#
#   /bin/bash -c SCRIPT sandgate-exec SECONDS WORKDIR CMD
#
# SECONDS is the deadline (0: none). User data (WORKDIR, CMD) arrives only as
# arguments. The exec's stdin is the caller's lifeline: the adapter attaches
# it, writes nothing and keeps it open for as long as the call lasts, so that
# it ends (EOF) exactly when the caller goes away: the call returns, is
# cancelled, or the executor dies (the engine closes an exec's stdin when the
# connection that attached it drops).
#
# Whichever way the command C ends, what it left running in the background
# stays: a caller that wanted a daemon keeps it. The steps:
#
# The sandbox image needs bash; setsid (util-linux or busybox) only on a
# runtime that does not make W a group leader. Without a working watchdog the
# adapter's own enforcement (EnforceGrace) is all that stops an overrun.
# 1. Make sure W leads its own process group, because the deadline and the
#    caller's departure kill the command by that group. runc makes every
#    exec'd process a session leader already; on a runtime that does not, W
#    re-executes itself under setsid (which keeps its pid).
if [ "$0" = sandgate-exec ] && read -r s 2>/dev/null </proc/$$/stat && s=${s##*) } && s=${s#* } && s=${s#* } &&
	[ "${s%% *}" != "$$" ] && command -v setsid >/dev/null; then
	exec setsid /bin/bash -c "$BASH_EXECUTION_STRING" sandgate-exec-leader "$@"
fi
# 2. Write the header `sandgate-exec:<pid>\n` to stderr. Nothing else can have
#    written to the exec's stderr yet (the command does not exist), so these
#    first bytes are as trustworthy as the image's /bin/bash: they name the
#    process group the adapter kills or probes from outside (exec-kill-group.sh,
#    exec-group-probe.sh). The Go side's HeaderStripper removes the line again.
#    A backend that relays stderr through a process the command can kill (the
#    Kubernetes relay) hands W the exec's own stderr as fd 8: the header is
#    written there, so a command that kills the relay cannot take the header
#    with it; W closes fd 8 before anything else runs.
if ! { printf 'sandgate-exec:%s\n' "$$" >&8; } 2>/dev/null; then printf 'sandgate-exec:%s\n' "$$" >&2; fi
exec 8>&-
# 3. Enter WORKDIR when it is not empty (126 when it cannot).
if [ -n "$2" ]; then
	cd -- "$2" || exit 126
	unset OLDPWD
fi
w=$$
r=$PPID
set -m
# 4. Without a deadline (SECONDS 0), start the lifeline watcher L as a forked
#    subshell in a process group of its own and exec the command C as
#    `/bin/bash -c CMD` in its own process, with stdin from /dev/null (never
#    the lifeline); the exec builtin lowers SHLVL by one, so C sees the
#    environment it would see without the wrapper. C keeps W's pid and group;
#    L kills that group if the lifeline ends while C runs. That is all: one
#    fork more than a bare `/bin/bash -c CMD`.
if [ "$1" = 0 ]; then
	{
	# L holds neither stdout nor stderr (the exec ends when the command does)
	# and waits for the lifeline's end. If its parent is still W's pid then,
	# the command is running and the caller is gone: L SIGKILLs the group.
	# Otherwise the command had ended (L was re-parented to the reaper, whatever
	# process W's pid is given to later) and the caller merely returned: L exits
	# and leaves what the command started in the background alone.
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
# 5. With a deadline, start the watchdog D the same way: a fork (job control
#    on for that one fork) in a group of its own, so that neither the
#    command's `kill 0` nor the group kill reaches it and it is not a member
#    of the command's group. D reads the lifeline with the read builtin,
#    bounded by SECONDS: no process besides the fork. When the read times out
#    and W's group still has members, D marks (one line `sandgate: command
#    exceeded its N s deadline and was killed` on stderr, a diagnostic for the
#    model, never evidence) and SIGKILLs W's whole group: W, the command and
#    every descendant that stayed in the group. When the read returns anything
#    else (EOF: the caller is gone), D SIGKILLs the group without a word and
#    exits. D ignores SIGPIPE so that a reader gone away cannot stop the kill.
#    A read that ends before its timeout (rc <= 128) means the caller is gone:
#    nothing is ever written to the lifeline, so a line counts as its end too.
#    Unless W no longer runs under the parent it started with (r): dead, or
#    re-parented because its parent — the exec's main process, the
#    Kubernetes relay — was killed. Then the command killed one of them, and
#    the lifeline may have ended only because the exec did (a runtime that
#    closes an exec's stdin when its main process exits, as containerd does
#    under Kubernetes' relay); the caller, following the group from outside,
#    is owed the deadline, so D keeps it, sleeping out the rest (by bash's
#    EPOCHREALTIME; without it, or without sleep, it kills at once).
{
	trap '' PIPE
	t0=${EPOCHREALTIME//[!0-9]/}
	read -r -t "$1" _
	if [ "$?" -le 128 ]; then
		s=
		read -r s 2>/dev/null </proc/$w/stat
		s=${s##*) }
		st=${s%% *}
		s=${s#* }
		if [ -z "$t0" ] || { [ -n "$st" ] && [ "$st" != Z ] && [ "${s%% *}" = "$r" ]; }; then
			kill -KILL -- "-$w" 2>/dev/null
			exit 0
		fi
		kill -0 -- "-$w" 2>/dev/null || exit 0
		left=$((t0 + $1 * 1000000 - ${EPOCHREALTIME//[!0-9]/}))
		if [ "$left" -gt 0 ]; then sleep "$((left / 1000000)).$(printf '%06d' $((left % 1000000)))" 2>/dev/null; fi
	fi
	kill -0 -- "-$w" 2>/dev/null || exit 0
	printf 'sandgate: command exceeded its %s s deadline and was killed\n' "$1" >&2
	kill -KILL -- "-$w"
} >/dev/null &
d=$!
set +m
# 6. Then run C as W's child in W's group, stdin from /dev/null and SHLVL
#    lowered as above. W's own stderr goes to /dev/null meanwhile, so that its
#    report of a signal death ("Terminated") is not mistaken for the command's
#    output. When C finished first, W kills D's group and exits at once with
#    C's status (128+N when C died of signal N). It does not wait to reap D:
#    the sandbox's init does (the keep-alive bash reaps), and the daemon learns
#    sooner that W is gone.
export SHLVL=$((SHLVL - 1))
exec 9>&2 2>/dev/null
/bin/bash -c "$3" </dev/null 2>&9 9>&-
rc=$?
kill -KILL -- "-$d"
exit "$rc"
