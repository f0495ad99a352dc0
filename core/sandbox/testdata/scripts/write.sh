export LC_ALL=C
unset CDPATH

__sg_fault() {
	local r=$3
	r=${r//$'\n'/ }
	r=${r//$'\r'/ }
	printf 'sandgate-fault:%s:%s:%s\n' "$1" "$2" "$r" >&2
	exit "$1"
}

__sg_reason() {
	local m=$1
	while [[ $m == *$'\n' ]]; do m=${m%$'\n'}; done
	m=${m##*$'\n'}
	printf '%s' "${m##*: }"
}

__sg_blocked() {
	local rest=${1#/} p=
	while [ -n "$rest" ]; do
		p=$p/${rest%%/*}
		case $rest in */*) rest=${rest#*/} ;; *) rest= ;; esac
		[ -d "$p" ] && continue
		if [ -e "$p" ] || [ -L "$p" ]; then
			__sg_fault 82 "$2" "Not a directory"
		fi
		return 0
	done
	return 0
}

__sg_pathfault() {
	__sg_blocked "${1%/*}" "$2"
}

__sg_dirfault() {
	if [ -d "$1" ]; then
		__sg_fault 81 "$2" "Is a directory"
	fi
	return 0
}

__sg_unreplaceable() {
	if [ ! -L "$1" ] && { [ -b "$1" ] || [ -c "$1" ]; }; then
		__sg_fault 84 "$2" "device node"
	fi
	[ -e "$1" ] && [ -r /proc/self/mountinfo ] || return 0
	local dir=${1%/*} canon mp _
	canon=$(cd -P -- "${dir:-/}" 2>/dev/null && pwd -P && printf .) || return 0
	canon=${canon%$'\n.'}
	canon=${canon%/}/${1##*/}
	while read -r _ _ _ _ mp _; do
		mp=${mp//\\040/ }
		mp=${mp//\\011/$'\t'}
		mp=${mp//\\012/$'\n'}
		mp=${mp//\\134/\\}
		if [ "$mp" = "$canon" ]; then
			__sg_fault 84 "$2" "mount point"
		fi
	done </proc/self/mountinfo
	return 0
}

__sg_mkdirs() {
	local e
	[ -d "${1:-/}" ] && return 0
	e=$(umask 022 && mkdir -p -- "${1:-/}" 2>&1) && return 0
	__sg_blocked "$1" "$2"
	__sg_fault 85 "$2" "$(__sg_reason "$e")"
}

__sg_keepmode() {
	local m=0644 e
	if [ -f "$1" ] && [ ! -L "$1" ]; then
		m=$(stat -c %a -- "$1" 2>/dev/null) || m=0644
	fi
	chmod -- "$m" "$2" 2>/dev/null && return 0
	e=$(chmod -- "$m" "$2" 2>&1) || __sg_fault 85 "$3" "$(__sg_reason "$e")"
	return 0
}

__sg_land() {
	local e
	__sg_keepmode "$1" "$2" "$3"
	__sg_dirfault "$1" "$3"
	mv -fT -- "$2" "$1" 2>/dev/null && return 0
	e=$(mv -fT -- "$2" "$1" 2>&1) && return 0
	__sg_pathfault "$1" "$3"
	__sg_dirfault "$1" "$3"
	__sg_fault 85 "$3" "$(__sg_reason "$e")"
}

__sg_tmp=$2
__sg_abort() {
	[ "$1" = 0 ] && return 0
	rm -f -- "$__sg_tmp" 2>/dev/null
	cat >/dev/null
}
trap '__sg_abort $?' EXIT

__sg_pathfault "$1" -
__sg_dirfault "$1" -
__sg_unreplaceable "$1" -
__sg_mkdirs "${1%/*}" -
if ! __sg_e=$( { head -c "$3" >"$2"; } 2>&1); then
	__sg_fault 85 - "$(__sg_reason "$__sg_e")"
fi
__sg_n=$(stat -c %s -- "$2")
if [ "$__sg_n" != "$3" ]; then
	__sg_fault 88 - "short body: $__sg_n of $3 bytes"
fi
if IFS= read -r -d '' -n 1 _; then
	__sg_fault 88 - "long body: more than $3 bytes"
fi
__sg_land "$1" "$2" -
