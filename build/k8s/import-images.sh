#!/usr/bin/env bash
# import-images.sh IMAGE... — copy images from the Docker engine into the
# cluster's containerd (namespace k8s.io), where the kubelet finds them: the
# cluster has no registry and pulls nothing.
#
# An image is imported only when containerd lacks it or holds another build:
# each import is labelled with the Docker image id
# (dev.sandgate.docker-id), so an unchanged image costs one `docker image
# inspect` and one `ctr images ls`, and a rebuilt one (same tag, new id)
# replaces the old. The cluster must be up (up.sh). Names are Docker's:
# `debian:bookworm` lands as docker.io/library/debian:bookworm, which is what
# the kubelet resolves a pod's `image: debian:bookworm` to.
set -euo pipefail
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/env.sh"
log() { echo "[k8s-lite import] $*" >&2; }
[ $# -gt 0 ] || { echo "usage: $0 IMAGE..." >&2; exit 2; }
CTR=(ctr -a "$CTRD_SOCK" -n k8s.io)
"${CTR[@]}" version >/dev/null 2>&1 || { log "containerd at $CTRD_SOCK does not answer: run up.sh first"; exit 1; }

# ref IMAGE: containerd's fully qualified name of a Docker image name.
ref() {
  local n=$1
  [[ "${n##*/}" == *[:@]* ]] || n=$n:latest
  if [[ "$n" != */* ]]; then
    n=docker.io/library/$n
  else
    case "${n%%/*}" in
      *.*|*:*|localhost) ;;                      # the first part is a registry host
      *) n=docker.io/$n ;;
    esac
  fi
  echo "$n"
}

for img in "$@"; do
  id=$(docker image inspect -f '{{.Id}}' "$img" 2>/dev/null) || { log "no Docker image $img"; exit 1; }
  r=$(ref "$img")
  if "${CTR[@]}" images ls "name==$r" 2>/dev/null | grep -qF "dev.sandgate.docker-id=$id"; then
    continue
  fi
  t=$(date +%s%N)
  docker save "$img" | "${CTR[@]}" images import - >/dev/null
  "${CTR[@]}" images ls -q "name==$r" | grep -qx "$r" || { log "$img did not arrive as $r"; exit 1; }
  "${CTR[@]}" images label "$r" "dev.sandgate.docker-id=$id" >/dev/null
  log "imported $img as $r (${id:7:12}) in $(( ($(date +%s%N) - t) / 1000000 )) ms"
done
