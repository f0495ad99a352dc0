
__sgb_m=$1 __sgb_d=$2 __sgb_n=$3 __sgb_nd=$4 __sgb_p=$5
if ! [[ $__sgb_n =~ ^[0-9]+$ && $__sgb_nd =~ ^[0-9]+$ && $__sgb_p =~ ^[0-9]+$ && $__sgb_m == /?* && $__sgb_d == /?* ]]; then
	printf 'sandgate bulk: bad arguments\n' >&2
	exit 2
fi
__sgb_shed=0
__sgb_tmp=() __sgb_tgt=() __sgb_dirs=() __sgb_stage=() __sgb_first=()
declare -A __sgb_okdir=()
umask 022
trap __sgb_exit EXIT

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

__sgb_exit() {
	local rc=$?
	if (( __sgb_shed == 2 || (__sgb_shed == 1 && rc != 0) )); then
		__sgb_chunk __sgb_stage rm -rf 2>/dev/null
		rm -f -- "$__sgb_m" "$__sgb_d" 2>/dev/null
	fi
	exit "$rc"
}

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

__sgb_load() {
	local -a m=()
	local i s t st prev= re='^\.sandgate-write-[0-9a-f]{16}$'
	if [[ -f $__sgb_d ]]; then
		mapfile -d '' -t __sgb_dirs <"$__sgb_d"
	fi
	if [[ -f $__sgb_m ]]; then
		mapfile -d '' -t m <"$__sgb_m"
	fi
	for ((i = 0; i + 1 < ${#m[@]}; i += 2)); do
		s=${m[i]} t=${m[i + 1]}
		[[ $t == /?* && ${s##*/} == "${t##*/}" && ${s%/*/*} == "${t%/*}" ]] || break
		st=${s%/*}
		if [[ $st != "$prev" ]]; then
			[[ ${st##*/} =~ $re ]] || break
			__sgb_stage+=("$st")
			__sgb_first+=("$((i / 2))")
			prev=$st
		fi
		__sgb_tmp+=("$s")
		__sgb_tgt+=("$t")
	done
	(( $1 == 0 || (${#m[@]} == 2 * __sgb_n && ${#__sgb_tgt[@]} == __sgb_n && ${#__sgb_dirs[@]} == __sgb_nd) ))
}

__sgb_blocked_members() {
	local i d prev=
	local -A seen=()
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

__sgb_prepare() {
	local i d k e
	__sgb_blocked_members
	if ! __sgb_chunk __sgb_dirs mkdir -p 2>/dev/null; then
		for ((i = 0; i < __sgb_n; i++)); do
			d=${__sgb_tgt[i]%/*}
			[[ -d ${d:-/} ]] || __sg_mkdirs "${d:-/}" "$i"
		done
	fi
	if ! __sgb_chunk __sgb_stage mkdir 2>/dev/null; then
		for ((k = 0; k < ${#__sgb_stage[@]}; k++)); do
			[[ -d ${__sgb_stage[k]} ]] && continue
			if ! e=$(mkdir -- "${__sgb_stage[k]}" 2>&1); then
				__sg_pathfault "${__sgb_stage[k]}" "${__sgb_first[k]}"
				__sg_fault 85 "${__sgb_first[k]}" "$(__sg_reason "$e")"
			fi
		done
	fi
}

__sgb_present() {
	local i
	for ((i = 0; i < __sgb_n; i++)); do
		[[ -f ${__sgb_tmp[i]} ]] || __sg_fault 87 "$i" "temporary file missing"
	done
}

__sgb_scan() {
	local i t d
	for ((i = $1; i < __sgb_n; i++)); do
		t=${__sgb_tgt[i]}
		[[ -d $t ]] && break
		d=${t%/*}
		d=${d:-/}
		if [[ -z ${__sgb_okdir[$d]-} ]]; then
			[[ -d $d && -w $d && -x $d ]] || break
			__sgb_okdir[$d]=1
		fi
	done
	__sgb_k=$i
}

__sgb_modes() {
	local i j t m out
	local -a all=() reg=() regi=() modes=() lst=()
	local -A bym=()
	for ((i = $1; i < $2; i++)); do
		all+=("${__sgb_tmp[i]}")
		t=${__sgb_tgt[i]}
		if [[ -f $t && ! -L $t ]]; then
			reg+=("$t")
			regi+=("$i")
		else
			bym[644]+=" $i"
		fi
	done
	(( ${#all[@]} )) || return 0
	__sgb_chunk all touch -c 2>/dev/null
	if (( ${#reg[@]} )); then
		out=$(__sgb_chunk reg stat -c %a 2>/dev/null) || return 1
		modes=($out)
		(( ${#modes[@]} == ${#reg[@]} )) || return 1
		for ((j = 0; j < ${#reg[@]}; j++)); do
			[[ ${modes[j]} =~ ^[0-7]+$ ]] || return 1
			bym[${modes[j]}]+=" ${regi[j]}"
		done
	fi
	for m in "${!bym[@]}"; do
		lst=()
		for i in ${bym[$m]}; do
			lst+=("${__sgb_tmp[i]}")
		done
		__sgb_chunk lst chmod "$m" 2>/dev/null || return 1
	done
}

__sgb_move() {
	local i=$1 j m st d
	local -a srcs=()
	while (( i < $2 )); do
		st=${__sgb_tmp[i]%/*}
		srcs=()
		for ((j = i; j < $2; j++)); do
			[[ ${__sgb_tmp[j]%/*} == "$st" ]] || break
			srcs+=("${__sgb_tmp[j]}")
		done
		d=${__sgb_tgt[i]%/*}
		if ! mv -f -t "${d:-/}" -- "${srcs[@]}" 2>/dev/null; then
			for ((m = i; m < j; m++)); do
				if [[ -e ${__sgb_tmp[m]} || -L ${__sgb_tmp[m]} ]]; then
					__sg_land "${__sgb_tgt[m]}" "${__sgb_tmp[m]}" "$m"
				fi
			done
		fi
		i=$j
	done
}

__sgb_land_all() {
	local s=0 k i
	while (( s < __sgb_n )); do
		__sgb_scan "$s"
		k=$__sgb_k
		if __sgb_modes "$s" "$k"; then
			__sgb_move "$s" "$k"
		else
			for ((i = s; i < k; i++)); do
				__sg_land "${__sgb_tgt[i]}" "${__sgb_tmp[i]}" "$i"
			done
		fi
		(( k < __sgb_n )) || return 0
		touch -c -- "${__sgb_tmp[k]}" 2>/dev/null
		__sg_land "${__sgb_tgt[k]}" "${__sgb_tmp[k]}" "$k"
		s=$((k + 1))
	done
}

__sgb_extract_rest() {
	local e l r
	e=$(tar -x -C / -f - --no-same-owner -m 2>&1) && return 0
	__sgb_blocked_members
	while IFS= read -r l; do
		case ${l##*: } in
		"Permission denied" | "Read-only file system" | "No space left on device" | "Disk quota exceeded" | "Wrote only "*)
			__sg_fault 85 - "${l##*: }" ;;
		esac
	done <<<"$e"
	r=${e%%$'\n'*}
	__sg_fault 87 - "archive extraction failed: ${r##*: }"
}
