#!/usr/bin/env bash
# down.sh — stop the k8s-lite cluster started by up.sh.
#
# Only processes recorded in $RUN/*.pid (and verified to run the expected
# binary) are signalled, plus the containerd shims that belong to *our*
# containerd socket (they are children of the containerd that up.sh started).
# Then pod mounts, network namespaces, the CNI bridge and all cluster state are
# removed. Cached binaries and images under $CACHE are kept.
set -uo pipefail
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/env.sh"
log() { echo "[k8s-lite down $(date +%T.%3N)] $*" >&2; }
[ "$(id -u)" = 0 ] || { log "must run as root"; exit 1; }
for d in "$STATE" "$CTRD_STATE" "$RUN"; do
  case "$d" in /|/var|/var/lib|/run|/tmp|/usr|/etc|"") log "refusing to work on state dir '$d'"; exit 1;; esac
done
mkdir -p "$RUN"
if [ "${K8S_LITE_LOCKED:-0}" != 1 ]; then exec 9>"$RUN/.lock"; flock 9; fi

# running PID: exists and is not a zombie (PID 1 on these VMs reaps lazily).
running() { local st; st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1); [ -n "$st" ] && [ "$st" != Z ]; }

# stop NAME EXPECTED_EXE_SUBSTRING
stop() {
  local name=$1 want=$2 f=$RUN/$1.pid pid exe
  [ -s "$f" ] || return 0
  pid=$(cat "$f")
  if running "$pid"; then
    exe=$(readlink "/proc/$pid/exe" 2>/dev/null || true)
    if [[ "$exe" != *"$want"* ]]; then
      log "pid $pid in $f runs '$exe', not '$want': leaving it alone"
      rm -f "$f"; return 0
    fi
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 1 100); do running "$pid" || break; sleep 0.1; done
    if running "$pid"; then log "$name (pid $pid) ignored SIGTERM, sending SIGKILL"; kill -KILL "$pid" 2>/dev/null; sleep 0.2; fi
    log "stopped $name (pid $pid)"
  fi
  rm -f "$f"
}

stop kubelet k8s-lite
stop kube-scheduler k8s-lite
stop kube-controller-manager k8s-lite

# Kill every container of our containerd instance (namespace k8s.io) so that
# their shims exit, then stop containerd itself.
CTR="ctr -a $CTRD_SOCK -n k8s.io"
if [ -S "$CTRD_SOCK" ] && $CTR version >/dev/null 2>&1; then
  for id in $($CTR tasks ls -q 2>/dev/null); do $CTR tasks kill -a -s SIGKILL "$id" >/dev/null 2>&1; done
  sleep 0.3
  for id in $($CTR tasks ls -q 2>/dev/null); do $CTR tasks delete -f "$id" >/dev/null 2>&1; done
  for id in $($CTR containers ls -q 2>/dev/null); do $CTR containers delete "$id" >/dev/null 2>&1; done
fi
stop containerd /usr/bin/containerd
# Shims of our containerd that are still around (e.g. containerd crashed):
# identified by our socket path on their command line.
for p in /proc/[0-9]*; do
  pid=${p#/proc/}
  [ "$(readlink "$p/exe" 2>/dev/null)" = /usr/bin/containerd-shim-runc-v2 ] || continue
  tr '\0' ' ' < "$p/cmdline" 2>/dev/null | grep -qF -- "-address $CTRD_SOCK " || continue
  log "killing leftover shim $pid"; kill -KILL "$pid" 2>/dev/null
done

stop kube-apiserver k8s-lite
stop etcd k8s-lite

# Unmount whatever pods/containerd left under our directories (deepest first).
for d in "$STATE" "$CTRD_STATE"; do
  awk -v d="$d" '$5 == d || index($5, d "/") == 1 {print $5}' /proc/self/mountinfo | sort -r | while read -r m; do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || log "could not unmount $m"
  done
done
ip link show "$CNI_BRIDGE" >/dev/null 2>&1 && ip link delete "$CNI_BRIDGE" && log "deleted bridge $CNI_BRIDGE"
# The forward rules up.sh added (allow_bridge_forward), from either chain.
if command -v iptables >/dev/null; then
  for chain in DOCKER-USER FORWARD; do
    while iptables -D "$chain" -i "$CNI_BRIDGE" -o "$CNI_BRIDGE" -m comment --comment k8s-lite -j ACCEPT 2>/dev/null; do :; done
    while iptables -D "$chain" -i "$CNI_BRIDGE" ! -o "$CNI_BRIDGE" -m comment --comment k8s-lite -j DROP 2>/dev/null; do :; done
  done
fi
rm -rf --one-file-system "$STATE" "$CTRD_STATE" "$RUN/etcd" 2>/dev/null || log "could not remove all state under $STATE"
rm -f "$CTRD_SOCK" "$CTRD_SOCK.ttrpc"
# Pod cgroups (kubelet cgroupRoot /$CGROUP_ROOT): kill any pod process that
# survived (e.g. orphaned when containerd or a shim died), then remove them.
[ -n "$CGROUP_ROOT" ] && for c in /sys/fs/cgroup/*/"$CGROUP_ROOT"; do
  [ -d "$c" ] || continue
  pids=$(find "$c" -name cgroup.procs -exec cat {} + 2>/dev/null | sort -u)
  [ -n "$pids" ] && { log "killing leftover pod processes in $c: $(echo $pids)"; kill -KILL $pids 2>/dev/null; sleep 0.3; }
  find "$c" -depth -type d -exec rmdir {} \; 2>/dev/null
done
log "done"
