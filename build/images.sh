#!/usr/bin/env bash
# images.sh builds the local base images the Dockerfile and the integration
# tests use, each only when it is missing, under the names a machine that can
# pull would use, so the same files work on both:
#
#   debian:bookworm       debootstrap --variant=minbase (bash, GNU coreutils, GNU tar)
#   busybox:1.35          Debian's busybox-static with its applet links
#   golang:1.26-bookworm  debian:bookworm plus this machine's Go toolchain
#
# Nothing here names a package mirror: debootstrap uses the one this machine's
# apt sources already use (SANDGATE_DEBIAN_MIRROR overrides it). Root
# filesystems are cached as tarballs under /var/cache/sandgate, so an image that
# was removed comes back in seconds.
set -euo pipefail

readonly CACHE=${SANDGATE_CACHE:-/var/cache/sandgate}
readonly LOCK=/var/lock/sandgate-images.lock
# RECIPE names the way the tarballs are made; bump it when that changes so a
# stale cache is not reused.
readonly RECIPE=v1
readonly SUITE=bookworm
readonly GOROOT_HOST=${SANDGATE_GOROOT:-/usr/local/go}
readonly GO_MINOR=1.26
readonly STD_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

log() { printf 'images: %s\n' "$*" >&2; }
die() {
	log "$*"
	exit 1
}

have_image() { docker image inspect "$1" >/dev/null 2>&1; }

need_root() {
	[[ $(id -u) -eq 0 ]] || die "building $1 needs root (debootstrap, apt); run as root or provide the image"
}

# apt_knows refreshes the package lists only when they do not know a package.
apt_knows() {
	command -v apt-get >/dev/null 2>&1 || die "apt-get not found: install $* by hand"
	local p
	for p in "$@"; do
		# Not `| grep -q`: under pipefail its early exit can fail the pipeline.
		[[ $(apt-cache policy "$p" 2>/dev/null) == *"Candidate: "[0-9]* ]] || {
			apt-get update -q
			return
		}
	done
}

apt_install() {
	apt_knows "$@"
	DEBIAN_FRONTEND=noninteractive NEEDRESTART_SUSPEND=1 apt-get install -y -q "$@"
}

# debian_mirror prints the Debian archive this machine's apt already uses:
# the first enabled deb source for the bookworm suite, from either the deb822
# *.sources files or the one-line sources.list format.
debian_mirror() {
	if [[ -n ${SANDGATE_DEBIAN_MIRROR:-} ]]; then
		printf '%s\n' "$SANDGATE_DEBIAN_MIRROR"
		return
	fi
	local files=() f uri
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
		[[ -r $f ]] && files+=("$f")
	done
	((${#files[@]})) || die "no apt sources found; set SANDGATE_DEBIAN_MIRROR to a Debian archive URL"
	uri=$(awk -v suite="$SUITE" '
		function flush() {
			if (types ~ /(^| )deb( |$)/ && enabled != "no" && (" " suites " ") ~ (" " suite " ") && uris != "" && !found) {
				split(uris, u, " "); print u[1]; found = 1
			}
			types = ""; suites = ""; uris = ""; enabled = ""
		}
		FILENAME ~ /\.sources$/ {
			if ($0 ~ /^[ \t]*$/) { flush(); next }
			if ($0 ~ /^#/) next
			key = tolower($1); sub(/:$/, "", key); $1 = ""; sub(/^ +/, "")
			if (key == "types") types = $0
			else if (key == "uris") uris = $0
			else if (key == "suites") suites = $0
			else if (key == "enabled") enabled = tolower($0)
			next
		}
		FNR == 1 { flush() }
		$1 == "deb" && !found {
			i = 2
			if ($i ~ /^\[/) { while ($i !~ /\]$/ && i < NF) i++; i++ }
			if ($(i + 1) == suite) { print $i; found = 1 }
		}
		END { flush() }
	' "${files[@]}")
	[[ -n $uri ]] || die "no apt source for suite $SUITE in ${files[*]}; set SANDGATE_DEBIAN_MIRROR"
	printf '%s\n' "$uri"
}

# scratch makes a work directory under the cache (same file system as the
# tarballs, so the final rename is atomic), sets WORK to it and registers its
# removal. It sets a variable rather than printing: a $(…) subshell could not
# record the directory for cleanup.
SCRATCH=()
WORK=
scratch() {
	WORK=$(mktemp -d "$CACHE/work.XXXXXX")
	SCRATCH+=("$WORK")
}
cleanup() {
	local d m
	for d in "${SCRATCH[@]}"; do
		# A failed debootstrap can leave proc/sys mounted inside its target.
		while read -r m; do umount -l "$m" 2>/dev/null || true; done < <(
			awk -v d="$d" '$5 == d || index($5, d "/") == 1 { print $5 }' /proc/self/mountinfo | sort -r
		)
		rm -rf --one-file-system -- "$d"
	done
}
trap cleanup EXIT

# import_rootfs loads a cached root filesystem tarball as an image.
import_rootfs() {
	local tarball=$1 ref=$2 cmd=$3
	docker import --change "CMD $cmd" --change "ENV PATH=$STD_PATH" - "$ref" <"$tarball" >/dev/null
	log "$ref imported from $tarball"
}

image_debian() {
	local ref=debian:$SUITE
	have_image "$ref" && return
	local tarball=$CACHE/debian-$SUITE-minbase-$RECIPE.tar
	if [[ ! -s $tarball ]]; then
		need_root "$ref"
		command -v debootstrap >/dev/null 2>&1 || apt_install debootstrap
		local mirror dir
		mirror=$(debian_mirror)
		scratch
		dir=$WORK/rootfs
		log "debootstrap --variant=minbase $SUITE (about a minute)"
		debootstrap --variant=minbase "$SUITE" "$dir" "$mirror" >"$dir.log" 2>&1 || {
			tail -n 30 "$dir.log" >&2
			die "debootstrap failed"
		}
		# What the official image also leaves out: package lists and caches.
		rm -rf -- "$dir"/var/lib/apt/lists/* "$dir"/var/cache/apt/*.bin "$dir"/var/cache/apt/archives/*.deb
		: >"$dir/etc/resolv.conf"
		tar --numeric-owner -C "$dir" -cf "$tarball.part" .
		mv -- "$tarball.part" "$tarball"
	fi
	import_rootfs "$tarball" "$ref" '["bash"]'
}

image_busybox() {
	local ref=busybox:1.35
	have_image "$ref" && return
	local tarball=$CACHE/busybox-1.35-$RECIPE.tar
	if [[ ! -s $tarball ]]; then
		need_root "$ref"
		local work root a
		scratch
		work=$WORK
		root=$work/rootfs
		apt_knows busybox-static
		# apt fetches as _apt when it can write the directory (no "unsandboxed" warning).
		chown _apt "$work" 2>/dev/null || true
		(cd "$work" && apt-get download -q busybox-static) >/dev/null
		dpkg-deb -x "$work"/busybox-static_*.deb "$work/pkg"
		mkdir -p "$root"/{bin,etc,root,tmp,home,var/spool/mail}
		chmod 1777 "$root/tmp"
		chmod 0700 "$root/root"
		install -m 0755 "$work/pkg/bin/busybox" "$root/bin/busybox"
		local banner
		banner=$("$root/bin/busybox" 2>&1 || true)
		[[ ${banner%%$'\n'*} == *' v1.35.'* ]] || die "busybox-static is not 1.35: ${banner%%$'\n'*}"
		for a in $("$root/bin/busybox" --list); do
			[[ $a == busybox ]] || ln -- "$root/bin/busybox" "$root/bin/$a"
		done
		printf '%s\n' 'root:x:0:0:root:/root:/bin/sh' 'nobody:x:65534:65534:nobody:/home:/bin/false' >"$root/etc/passwd"
		printf '%s\n' 'root:x:0:' 'nogroup:x:65534:' >"$root/etc/group"
		tar --numeric-owner --owner=0 --group=0 -C "$root" -cf "$tarball.part" .
		mv -- "$tarball.part" "$tarball"
	fi
	import_rootfs "$tarball" "$ref" '["sh"]'
}

image_golang() {
	local ref=golang:$GO_MINOR-$SUITE
	have_image "$ref" && return
	local gov
	gov=$("$GOROOT_HOST/bin/go" env GOVERSION 2>/dev/null) || die "no Go toolchain at $GOROOT_HOST (set SANDGATE_GOROOT)"
	[[ $gov == go$GO_MINOR || $gov == go$GO_MINOR.* ]] || die "$GOROOT_HOST is $gov, not go$GO_MINOR"
	[[ -r /etc/ssl/certs/ca-certificates.crt ]] || apt_install ca-certificates
	local work cid
	scratch
	work=$WORK
	# GOPATH as the official image makes it: world-writable with the sticky bit.
	mkdir -p "$work/go/src" "$work/go/bin"
	chmod -R 1777 "$work/go"
	cid=$(docker create debian:"$SUITE" true)
	# shellcheck disable=SC2064 # expand cid now
	trap "docker rm -f $cid >/dev/null 2>&1 || true; cleanup" EXIT
	tar --numeric-owner -C "$GOROOT_HOST/.." -c "$(basename "$GOROOT_HOST")" --transform 's,^[^/]*,usr/local/go,S' |
		docker cp - "$cid":/
	tar --numeric-owner -C "$work" -c go | docker cp - "$cid":/
	# The build stage fetches modules over TLS; minbase has no CA bundle.
	tar --numeric-owner --dereference -C / -c etc/ssl/certs/ca-certificates.crt | docker cp - "$cid":/
	docker commit \
		--change "ENV GOLANG_VERSION=${gov#go}" --change 'ENV GOTOOLCHAIN=local' --change 'ENV GOPATH=/go' \
		--change "ENV PATH=/go/bin:/usr/local/go/bin:$STD_PATH" --change 'WORKDIR /go' --change 'CMD ["bash"]' \
		"$cid" "$ref" >/dev/null
	docker rm -f "$cid" >/dev/null
	trap cleanup EXIT
	log "$ref committed ($gov from $GOROOT_HOST)"
}

main() {
	"$(dirname "$0")/ensure-docker.sh"
	mkdir -p "$CACHE" "$(dirname "$LOCK")"
	exec 9>"$LOCK"
	flock -w 600 9 || die "another images.sh holds $LOCK"
	local t
	for t in debian busybox golang; do
		SECONDS=0
		"image_$t"
		log "$t ready (${SECONDS}s)"
	done
}

main "$@"
