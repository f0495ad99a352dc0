#!/bin/bash
# bulk.sh: the bulk-write library. Every bulk script is lib.sh, then this file,
# then its own few lines (bulk-*.sh), run as
# `/bin/bash -c SCRIPT sandgate MANIFEST DIRLIST N D PREFIX`: the bookkeeping
# paths, the member count, the dir count and the archive prefix length. Paths
# never enter the script text.
#
# The flow on Docker is bulk-prepare.sh (stdin: the archive's bookkeeping
# prefix) -> one archive PUT per upload group -> bulk-rename.sh, or
# bulk-discard.sh when a PUT failed. On Kubernetes it is bulk-oneshot.sh alone
# (stdin: the whole archive), which does all three in one exec.
#
# Cost is what shapes this library: a process costs 1 to 20 ms in a sandbox and
# bash runs a loop of ten thousand slowly. So the prepare step works on the
# directory list alone (bash builtins and one mkdir per chunk of new
# directories), and the land step runs in one perl process (bulk.pl) where perl
# exists. Without perl, bash lands the members with one `mv` each after setting
# their modes in bulk: slower, but the same steps. Either way, a failure falls
# back to lib.sh's per-member functions to name the member and its reason.
#
# @BULK_PL@ below is replaced by bulk.pl (comments stripped) when the package
# loads; the perl program holds no single quote, so it fits the quoted word.
# shellcheck shell=bash
__sgb_m=$1 __sgb_d=$2 __sgb_n=$3 __sgb_nd=$4 __sgb_p=$5
if ! [[ $__sgb_n =~ ^[0-9]+$ && $__sgb_nd =~ ^[0-9]+$ && $__sgb_p =~ ^[0-9]+$ && $__sgb_m == /?* && $__sgb_d == /?* ]]; then
	printf 'sandgate bulk: bad arguments\n' >&2
	exit 2
fi
__sgb_shed=0 __sgb_drain=0
__sgb_tmp=() __sgb_tgt=() __sgb_dirs=() __sgb_ready=()
__sgb_perl=
if command -v perl >/dev/null 2>&1; then
	__sgb_perl=1
fi
umask 022
trap __sgb_exit EXIT

# shellcheck disable=SC2016 # the perl program is literal text, not a bash expansion
__sgb_plprog='@BULK_PL@'

# __sgb_pl START: exec bulk.pl (only inside $(...) or (...)).
__sgb_pl() {
	unset PERL5OPT PERL5LIB PERLLIB PERL5DB PERL_UNICODE PERLIO
	exec perl -e "$__sgb_plprog" -- "$__sgb_m" "$__sgb_d" "$__sgb_n" "$1"
}

# __sgb_chunk ARRAY CMD...: run `CMD... -- ELEMENTS` over ARRAY in chunks of at
# most 64 KiB of arguments; fails if any chunk failed.
__sgb_chunk() {
	local -n __sgb_list=$1
	shift
	local -a c=()
	local p n=0 rc=0
	for p in "${__sgb_list[@]}"; do
		if (( ${#c[@]} && n + ${#p} > 65536 )); then
			"$@" -- "${c[@]}" || rc=1
			c=() n=0
		fi
		c+=("$p")
		n=$((n + ${#p} + 1))
	done
	if (( ${#c[@]} )); then
		"$@" -- "${c[@]}" || rc=1
	fi
	return "$rc"
}

# __sgb_exit: the EXIT trap. With __sgb_shed=1 a failing exit, with
# __sgb_shed=2 any exit, removes every temporary file the manifest names and
# the bookkeeping, so every fault sheds what the batch left. With
# __sgb_drain=1 a failing exit first reads stdin to its end: on Kubernetes
# the archive arrives over the exec's WebSocket, and a refusal that leaves
# megabytes unread stalls that connection (its pings queue behind them) until
# it times out, losing the verdict.
__sgb_exit() {
	local rc=$?
	local -a all=()
	if (( __sgb_drain && rc != 0 )); then
		cat >/dev/null 2>&1
	fi
	if (( __sgb_shed == 2 || (__sgb_shed == 1 && rc != 0) )); then
		(( ${#__sgb_tmp[@]} )) || __sgb_load 0
		# shellcheck disable=SC2034 # __sgb_chunk reads all through its nameref
		all=("${__sgb_tmp[@]}" "$__sgb_m" "$__sgb_d")
		__sgb_chunk all rm -f 2>/dev/null
	fi
	exit "$rc"
}

# __sgb_unpack: extract the archive's first PREFIX bytes from stdin (the
# bookkeeping entries); a failure is 82 (blocked workdir), 85 (workdir not
# writable) or 87.
__sgb_unpack() {
	local e wd=${__sgb_m%/*}
	e=$(set -o pipefail; head -c "$__sgb_p" | tar -x -C / -f - --no-same-owner -m 2>&1) && return 0
	wd=${wd:-/}
	__sg_blocked "$wd" -
	if ! [[ -d $wd && -w $wd && -x $wd ]]; then
		e=$(mkdir -p -- "$wd" 2>&1 && { : >>"$__sgb_m"; } 2>&1) || __sg_fault 85 - "$(__sg_reason "$e")"
	fi
	__sg_fault 87 - "bulk bookkeeping did not arrive: $(__sg_reason "${e%%$'\n'*}")"
}

# __sgb_extract_rest: extract the rest of stdin (the members); a failure is 82
# (a parent blocked since the prepare step), 85 when tar reports a refused or
# short write (GNU tar says "Wrote only N of M bytes" for a full disk, without
# the errno), else 87.
__sgb_extract_rest() {
	local e l r=
	e=$(tar -x -C / -f - --no-same-owner -m 2>&1) && return 0
	__sgb_blocked_members
	# The fault is raised outside the loop, whose stdin is the here-string: the
	# exit trap must drain the body, not the message.
	while IFS= read -r l; do
		case ${l##*: } in
		"Permission denied" | "Read-only file system" | "No space left on device" | "Disk quota exceeded" | "Wrote only "*)
			r=${l##*: }
			break ;;
		esac
	done <<<"$e"
	[ -z "$r" ] || __sg_fault 85 - "$r"
	r=${e%%$'\n'*}
	__sg_fault 87 - "archive extraction failed: ${r##*: }"
}

# __sgb_load STRICT: read the manifest into __sgb_tmp/__sgb_tgt (member order)
# and the dir list into __sgb_dirs. Pairs that are not shaped as the plan
# writes them end the read; it fails unless everything matched N and D.
__sgb_load() {
	local -a m=()
	local i s t re='^\.sandgate-write-[0-9a-f]{16}$'
	__sgb_tmp=() __sgb_tgt=() __sgb_dirs=()
	if [[ -f $__sgb_d ]]; then
		mapfile -d '' -t __sgb_dirs <"$__sgb_d"
	fi
	if [[ -f $__sgb_m ]]; then
		mapfile -d '' -t m <"$__sgb_m"
	fi
	for ((i = 0; i + 1 < ${#m[@]}; i += 2)); do
		s=${m[i]} t=${m[i + 1]}
		[[ $t == /* && $t != */ && ${s%/*} == "${t%/*}" && ${s##*/} =~ $re ]] || break
		__sgb_tmp+=("$s")
		__sgb_tgt+=("$t")
	done
	(( $1 == 0 || (${#m[@]} == 2 * __sgb_n && ${#__sgb_tgt[@]} == __sgb_n && ${#__sgb_dirs[@]} == __sgb_nd) ))
}

# __sgb_blocked_members: fault 82 naming the lowest member whose parent chain
# holds a non-directory.
__sgb_blocked_members() {
	local i d prev=
	local -A seen=()
	(( ${#__sgb_tgt[@]} )) || __sgb_load 0
	for ((i = 0; i < ${#__sgb_tgt[@]}; i++)); do
		d=${__sgb_tgt[i]%/*}
		d=${d:-/}
		[[ $d == "$prev" ]] && continue
		prev=$d
		[[ -n ${seen[$d]-} ]] && continue
		seen[$d]=1
		__sg_blocked "$d" "$i"
	done
}

# __sgb_malformed: fault 87, the bookkeeping is not what the plan wrote.
__sgb_malformed() {
	__sg_fault 87 - "bulk manifest missing or malformed"
}

# __sgb_prepare: from the dir list alone, refuse a blocked parent chain
# anywhere (82), create the missing directories (new ones 0755), and probe the
# existing ones the user cannot write to (they would take the PUT's files as
# root but never let the rename land or remove them). Only a failure reads the
# manifest, to name the lowest member that meets it: 82, or 85 with the reason.
__sgb_prepare() {
	local d p i e bad=
	local -a new=()
	local -A seen=() shut=()
	mapfile -d '' -t __sgb_dirs <"$__sgb_d"
	(( ${#__sgb_dirs[@]} == __sgb_nd )) || __sgb_malformed
	for d in "${__sgb_dirs[@]}"; do
		[[ $d == /* ]] || __sgb_malformed
		if [[ -d $d ]]; then
			[[ -w $d && -x $d ]] || shut[$d]=1
			continue
		fi
		new+=("$d")
		p=$d
		while [[ -n $p && -z ${seen[$p]-} ]]; do
			seen[$p]=1
			[[ -d $p ]] && break
			if [[ -e $p || -L $p ]]; then
				__sgb_blocked_members
				__sg_blocked "$d" -
			fi
			p=${p%/*}
		done
	done
	if (( ${#new[@]} )) && ! __sgb_chunk new mkdir -p 2>/dev/null; then
		bad=1
	fi
	[[ -n $bad || ${#shut[@]} -gt 0 ]] || return 0
	__sgb_load 1 || __sgb_malformed
	for ((i = 0; i < __sgb_n; i++)); do
		d=${__sgb_tgt[i]%/*}
		d=${d:-/}
		[[ -n $bad ]] && __sg_mkdirs "$d" "$i"
		[[ ${shut[$d]-} == 1 ]] || continue
		shut[$d]=0
		e=$({ : >>"${__sgb_tmp[i]}"; } 2>&1) || __sg_fault 85 "$i" "$(__sg_reason "$e")"
		rm -f -- "${__sgb_tmp[i]}"
	done
}

# __sgb_land: check that every temporary file arrived (87 naming the first
# missing member), then land every member in order, stopping at the first
# failure: with bulk.pl where perl runs (__sgb_pl_land), else with bash
# (__sgb_sh_land).
__sgb_land() {
	if [[ -n $__sgb_perl ]] && __sgb_pl_land; then
		return 0
	fi
	__sgb_load 1 || __sgb_malformed
	__sgb_sh_land
}

# __sgb_pl_land: run bulk.pl from member 0; on its verdict 4 or 5 hand the
# member it names to __sg_land, which names the failure precisely (or lands it
# after all), and resume bulk.pl after it. Returns 1 when perl itself failed,
# so the bash path runs.
__sgb_pl_land() {
	local out rc i s=0
	while :; do
		out=$(__sgb_pl "$s")
		rc=$?
		i=${out%%$'\t'*}
		# shellcheck disable=SC2015 # meant: a bad index is malformed, a good one goes on
		case $rc in
		0) __sgb_shed=0; return 0 ;;
		3) __sgb_malformed ;;
		4 | 5) [[ $i =~ ^[0-9]+$ ]] && (( i < __sgb_n )) || __sgb_malformed ;;
		*) return 1 ;;
		esac
		(( rc == 4 )) && __sg_fault 87 "$i" "temporary file missing"
		(( ${#__sgb_tgt[@]} )) || __sgb_load 1 || __sgb_malformed
		__sg_land "${__sgb_tgt[i]}" "${__sgb_tmp[i]}" "$i"
		s=$((i + 1))
	done
}

# __sgb_present: fault 87 naming the first member whose temporary file is
# missing or not a regular file.
__sgb_present() {
	local i
	for ((i = 0; i < __sgb_n; i++)); do
		[[ -f ${__sgb_tmp[i]} && ! -L ${__sgb_tmp[i]} ]] || __sg_fault 87 "$i" "temporary file missing"
	done
}

# __sgb_modes: set the temporary files' modes in bulk (an existing regular
# target's mode, else 0644, where the archive did not already give it) and mark
# in __sgb_ready the members whose mode is right. Any surprise returns early:
# the members not marked go through __sg_land one by one.
__sgb_modes() {
	local i j m t out
	local -a reg=() regi=() modes=() cur=() want=() lst=()
	local -A bym=()
	for ((i = 0; i < __sgb_n; i++)); do
		want[i]=644
		t=${__sgb_tgt[i]}
		if [[ -f $t && ! -L $t ]]; then
			reg+=("$t")
			regi+=("$i")
		fi
	done
	if (( ${#reg[@]} )); then
		out=$(__sgb_chunk reg stat -c %a 2>/dev/null) || return 0
		mapfile -t modes <<<"$out"
		(( ${#modes[@]} == ${#reg[@]} )) || return 0
		for ((j = 0; j < ${#reg[@]}; j++)); do
			[[ ${modes[j]} =~ ^[0-7]+$ ]] || return 0
			want[regi[j]]=${modes[j]}
		done
	fi
	out=$(__sgb_chunk __sgb_tmp stat -c %a 2>/dev/null) || return 0
	mapfile -t cur <<<"$out"
	(( ${#cur[@]} == __sgb_n )) || return 0
	for ((i = 0; i < __sgb_n; i++)); do
		if [[ ${cur[i]} == "${want[i]}" ]]; then
			__sgb_ready[i]=1
		else
			bym[${want[i]}]+=" $i"
		fi
	done
	for m in "${!bym[@]}"; do
		lst=()
		for i in ${bym[$m]}; do
			lst+=("${__sgb_tmp[i]}")
		done
		__sgb_chunk lst chmod "$m" 2>/dev/null || continue
		for i in ${bym[$m]}; do
			__sgb_ready[i]=1
		done
	done
}

# __sgb_sh_land: land with one `mv -fT` per ready member. A member that is not
# ready or fails goes through __sg_land, which names its failure or lands it
# after all, and the run goes on after it.
__sgb_sh_land() {
	local i t
	__sgb_present
	__sgb_modes
	for ((i = 0; i < __sgb_n; i++)); do
		t=${__sgb_tgt[i]}
		if [[ -n ${__sgb_ready[i]-} && ! -d $t ]] && mv -fT -- "${__sgb_tmp[i]}" "$t" 2>/dev/null; then
			continue
		fi
		__sg_land "$t" "${__sgb_tmp[i]}" "$i"
	done
	rm -f -- "$__sgb_m" "$__sgb_d" 2>/dev/null
	__sgb_shed=0
}
