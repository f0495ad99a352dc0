
__sgb_m=$1 __sgb_d=$2 __sgb_n=$3 __sgb_nd=$4 __sgb_p=$5
if ! [[ $__sgb_n =~ ^[0-9]+$ && $__sgb_nd =~ ^[0-9]+$ && $__sgb_p =~ ^[0-9]+$ && $__sgb_m == /?* && $__sgb_d == /?* ]]; then
	printf 'sandgate bulk: bad arguments\n' >&2
	exit 2
fi
__sgb_shed=0
__sgb_tmp=() __sgb_tgt=() __sgb_dirs=() __sgb_stage=() __sgb_first=()
declare -A __sgb_okdir=()
__sgb_perl=
if command -v perl >/dev/null 2>&1; then
	__sgb_perl=1
fi
umask 022
trap __sgb_exit EXIT

__sgb_plprog='use strict;
my ($act, $mf, $n, $start) = @ARGV;
my (@s, @t, @stage, @first);

sub load {
	my $fh;
	open($fh, "<:raw", $mf) or return 0;
	local $/;
	my $raw = <$fh>;
	close $fh;
	my @m = split /\0/, (defined $raw ? $raw : ""), -1;
	my $whole = (@m == 2 * $n + 1 && $m[-1] eq "");
	for (my $i = 0; $i + 1 < @m; $i += 2) {
		my ($s, $t) = @m[$i, $i + 1];
		my ($sd, $sb) = $s =~ m{\A(.*)/([^/]+)\z}s;
		my ($td, $tb) = $t =~ m{\A(/.*|)/([^/]+)\z}s;
		last unless defined $sb && defined $tb && $sb eq $tb;
		my ($pd, $sn) = $sd =~ m{\A(.*)/([^/]+)\z}s;
		last unless defined $sn && $pd eq $td && $sn =~ /\A\.sandgate-write-[0-9a-f]{16}\z/;
		push @s, $s;
		push @t, $t;
		if (!@stage || $stage[-1] ne $sd) {
			push @stage, $sd;
			push @first, $i / 2;
		}
	}
	return $whole && @t == $n;
}

sub verdict {
	my ($code, $i, $why) = @_;
	print "$i\t$why\n";
	exit $code;
}

sub dirof {
	my $p = shift;
	$p =~ s{/[^/]*\z}{}s;
	return $p eq "" ? "/" : $p;
}

sub blocked {
	my $p = "";
	for my $c (grep { $_ ne "" } split m{/}, shift) {
		$p .= "/$c";
		next if -d $p;
		return -e $p || -l $p;
	}
	return 0;
}

sub mkpath {
	my $p = "";
	for my $c (grep { $_ ne "" } split m{/}, shift) {
		$p .= "/$c";
		next if -d $p;
		next if mkdir $p, 0777;
		my $e = $!;
		next if -d $p;
		$! = $e;
		return 0;
	}
	return 1;
}

if ($act eq "prepare") {
	load() or exit 3;
	my (%first_of, @dirs, %bad);
	for my $i (0 .. $#t) {
		my $d = dirof($t[$i]);
		next if exists $first_of{$d};
		$first_of{$d} = $i;
		push @dirs, $d;
	}
	for my $d (@dirs) {
		$bad{$d} = 1 if blocked($d);
	}
	if (%bad) {
		for my $i (0 .. $#t) {
			verdict(6, $i, "Not a directory") if $bad{dirof($t[$i])};
		}
	}
	for my $d (@dirs) {
		mkpath($d) or verdict(7, $first_of{$d}, "$!");
	}
	for my $k (0 .. $#stage) {
		mkdir $stage[$k], 0777 or verdict(8, $first[$k], "$!");
	}
	exit 0;
}

if ($act eq "land") {
	load() or exit 3;
	my @mtime;
	for my $i ($start .. $#s) {
		my @st = stat $s[$i];
		verdict(4, $i, "temporary file missing") unless @st && -f _;
		$mtime[$i] = $st[9];
		last if $start > 0;
	}
	for my $i ($start .. $#s) {
		my ($s, $t) = ($s[$i], $t[$i]);
		my $mode = 0644;
		if (my @st = lstat $t) {
			my ($reg, $link, $dir) = (-f _, -l _, -d _);
			verdict(5, $i, "Is a directory") if $dir || ($link && -d $t);
			$mode = $st[2] & 07777 if $reg;
		}
		chmod $mode, $s or verdict(5, $i, "$!");
		utime undef, undef, $s if !defined $mtime[$i] || $mtime[$i] == 0;
		rename $s, $t or verdict(5, $i, "$!");
	}
	rmdir $_ for @stage;
	exit 0;
}

if ($act eq "shed") {
	load();
	for my $d (@stage) {
		if (-l $d) {
			unlink $d;
			next;
		}
		if (opendir my $dh, $d) {
			for my $e (readdir $dh) {
				unlink "$d/$e" unless $e eq "." || $e eq "..";
			}
			closedir $dh;
		}
		rmdir $d;
	}
	exit 0;
}
exit 2;
'

__sgb_pl() {
	unset PERL5OPT PERL5LIB PERLLIB PERL5DB PERL_UNICODE PERLIO
	exec perl -e "$__sgb_plprog" -- "$1" "$__sgb_m" "$__sgb_n" "$2"
}

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
		if (( ${#__sgb_stage[@]} )) || [[ -z $__sgb_perl ]] || ! (__sgb_pl shed 0) >/dev/null 2>&1; then
			(( ${#__sgb_stage[@]} )) || __sgb_load 0
			__sgb_chunk __sgb_stage rm -rf 2>/dev/null
		fi
	fi
	if (( __sgb_shed >= 2 || (__sgb_shed == 1 && rc != 0) )); then
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

__sgb_load() {
	local -a m=()
	local i s t st prev= re='^\.sandgate-write-[0-9a-f]{16}$'
	__sgb_tmp=() __sgb_tgt=() __sgb_dirs=() __sgb_stage=() __sgb_first=()
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

__sgb_malformed() {
	__sg_fault 87 - "bulk manifest missing or malformed"
}

__sgb_step() {
	if [[ -n $__sgb_perl ]]; then
		"__sgb_pl_$1" && return 0
	fi
	__sgb_load 1 || __sgb_malformed
	"__sgb_sh_$1"
}

__sgb_pl_prepare() {
	local out rc i d
	out=$(__sgb_pl prepare 0)
	rc=$?
	i=${out%%$'\t'*}
	case $rc in
	0) return 0 ;;
	3) __sgb_malformed ;;
	6 | 7 | 8) [[ $i =~ ^[0-9]+$ ]] && __sgb_load 1 && (( i < __sgb_n )) || __sgb_malformed ;;
	*) return 1 ;;
	esac
	d=${__sgb_tgt[i]%/*}
	case $rc in
	6) __sg_blocked "${d:-/}" "$i" ;;
	7) __sg_mkdirs "${d:-/}" "$i" ;;
	8) __sg_pathfault "${__sgb_tmp[i]%/*}" "$i" ;;
	esac
	__sg_fault "$(( rc == 6 ? 82 : 85 ))" "$i" "${out#*$'\t'}"
}

__sgb_sh_prepare() {
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

__sgb_pl_land() {
	local out rc i s=0
	while :; do
		out=$(__sgb_pl land "$s")
		rc=$?
		i=${out%%$'\t'*}
		case $rc in
		0) __sgb_shed=3; return 0 ;;
		3) __sgb_malformed ;;
		4 | 5) [[ $i =~ ^[0-9]+$ ]] && (( i < __sgb_n )) || __sgb_malformed ;;
		*) return 1 ;;
		esac
		(( rc == 4 )) && __sg_fault 87 "$i" "temporary file missing"
		(( ${#__sgb_tgt[@]} )) || __sgb_load 1 || __sgb_malformed
		touch -c -- "${__sgb_tmp[i]}" 2>/dev/null
		__sg_land "${__sgb_tgt[i]}" "${__sgb_tmp[i]}" "$i"
		s=$((i + 1))
	done
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

__sgb_sh_land() {
	local s=0 k i
	__sgb_present
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
		(( k < __sgb_n )) || break
		touch -c -- "${__sgb_tmp[k]}" 2>/dev/null
		__sg_land "${__sgb_tgt[k]}" "${__sgb_tmp[k]}" "$k"
		s=$((k + 1))
	done
	__sgb_shed=2
}
