#!/usr/bin/env bash
# up.sh — start a real single-node Kubernetes cluster ("k8s-lite") on loopback.
#
#   etcd (embedded, in the k8s-lite binary) -> kube-apiserver -> containerd (own
#   instance, CRI on) -> kube-controller-manager, kube-scheduler -> kubelet
#
# Idempotent: when the cluster is already up it only prints the kubeconfig path;
# when it is half up it is torn down (down.sh) and started again. Binaries and
# images are built once and cached under $CACHE (default /var/cache/sandgate/k8s).
# Logs, pid files, certificates and kubeconfigs live under $RUN (/tmp/k8s-lite).
# The last line on stdout is the path of an admin kubeconfig; everything else
# goes to stderr.
#
# `up.sh --check` only reports (exit status 0 when the cluster is up) and
# starts nothing. Environment knobs: see env.sh. K8S_LITE_SKIP_BUILD=1 fails
# instead of building.
set -euo pipefail
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/env.sh"

T0=$(date +%s%N)
log() { printf '[k8s-lite %6.1fs] %s\n' "$(( ($(date +%s%N) - T0) / 1000000 ))e-3" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
[ "$(id -u)" = 0 ] || die "must run as root"
export PATH=/usr/local/go/bin:$PATH
# $RUN holds the cluster's private keys and its admin kubeconfig: it is made
# with umask 077 and kept root's alone, and one that root does not own (a
# /tmp path another user made first, or a symlink) is refused, not used.
[ ! -L "$RUN" ] || die "$RUN is a symlink; refusing it (remove it or set K8S_LITE_RUN)"
(umask 077 && mkdir -p "$RUN")
[ "$(stat -c %u "$RUN")" = 0 ] || die "$RUN is not owned by root; refusing it (remove it or set K8S_LITE_RUN)"
chmod 700 "$RUN"
exec 9>"$RUN/.lock"; flock 9   # one up.sh/down.sh at a time
export K8S_LITE_LOCKED=1

# pid file names a live (non-zombie) process
pid_alive() {
  local f=$RUN/$1.pid st
  [ -s "$f" ] || return 1
  st=$(sed 's/.*) //' "/proc/$(cat "$f")/stat" 2>/dev/null | cut -d' ' -f1)
  [ -n "$st" ] && [ "$st" != Z ]
}
curl_api() { curl -sf --max-time 5 --cacert "$RUN/pki/ca.crt" --cert "$RUN/pki/admin.crt" --key "$RUN/pki/admin.key" "https://127.0.0.1:$APISERVER_PORT$1"; }
# Ready condition True and the not-ready taint removed (by the node lifecycle controller).
node_ready() {
  curl_api "/api/v1/nodes/$NODE_NAME" 2>/dev/null | jq -e '
    ([.status.conditions[]? | select(.type=="Ready" and .status=="True")] | length == 1) and
    ([.spec.taints[]? | select(.key|startswith("node.kubernetes.io/"))] | length == 0)' >/dev/null 2>&1
}

# Pod-to-pod traffic crosses the bridge, and with br_netfilter loaded (Docker
# loads it) bridged frames go through iptables' FORWARD chain, whose policy
# Docker sets to DROP: without the ACCEPT rule pods cannot reach each other.
# Pods have a default route (via the bridge's host address, CONTRACT C-PROV-7
# needs one for unrestricted sessions), so the DROP rule after it keeps
# anything from being forwarded off the bridge: pods reach each other and the
# host's own addresses, nothing beyond. Docker's DOCKER-USER chain when there
# is one (Docker keeps it first in FORWARD and never flushes it), FORWARD
# otherwise. Idempotent, so it also runs when already up.
bridge_forward_rules() { # prints one rule per line, in order
  echo "-i $CNI_BRIDGE -o $CNI_BRIDGE -m comment --comment k8s-lite -j ACCEPT"
  echo "-i $CNI_BRIDGE ! -o $CNI_BRIDGE -m comment --comment k8s-lite -j DROP"
}
allow_bridge_forward() {
  command -v iptables >/dev/null || return 0
  local chain=FORWARD pos=1 rule
  iptables -n -L DOCKER-USER >/dev/null 2>&1 && chain=DOCKER-USER
  while read -r rule; do
    # shellcheck disable=SC2086 # the rule is words
    iptables -C "$chain" $rule 2>/dev/null || iptables -I "$chain" "$pos" $rule
    pos=$((pos + 1))
  done < <(bridge_forward_rules)
}

# The pod bridge with its host address, created here rather than by the CNI
# plugin at the first pod (which finds and keeps it): tests and the executor
# listen on that address for the gates of sandbox pods (the control plane)
# before any pod exists. The address is the subnet's first, the gateway the
# host-local IPAM hands pods. Idempotent, so it also runs when already up.
bridge_gateway() { # first host address of $POD_CIDR (an IPv4 network)
  local IFS=.
  # shellcheck disable=SC2086 # split the address on dots
  set -- ${POD_CIDR%/*}
  echo "$1.$2.$3.$(($4 + 1))/${POD_CIDR#*/}"
}
ensure_bridge() {
  local gw
  gw=$(bridge_gateway)
  ip link show "$CNI_BRIDGE" >/dev/null 2>&1 || ip link add "$CNI_BRIDGE" type bridge
  ip -4 addr show dev "$CNI_BRIDGE" | grep -qF " $gw " || ip addr add "$gw" dev "$CNI_BRIDGE"
  ip link set "$CNI_BRIDGE" up
}

# ---------------------------------------------------------------- already up?
all_alive=1 any_alive=0
for c in $COMPONENTS; do if pid_alive "$c"; then any_alive=1; else all_alive=0; fi; done
cluster_up() { [ "$all_alive" = 1 ] && [ -s "$KUBECONFIG_ADMIN" ] && curl_api /readyz >/dev/null 2>&1 && node_ready; }
if [ "${1:-}" = --check ]; then cluster_up; exit; fi   # 0: up, 1: not (or half) up; starts nothing
if cluster_up; then
  allow_bridge_forward
  ensure_bridge
  log "already running"
  echo "$KUBECONFIG_ADMIN"
  exit 0
fi
if [ "$any_alive" = 1 ] || [ -e "$CTRD_SOCK" ] || [ -d "$STATE/kubelet" ]; then
  log "partial or stale cluster found: running down.sh first"
  bash "$K8S_LITE_DIR/down.sh" >&2
fi
# After down.sh, which deletes the bridge and its forward rules.
allow_bridge_forward
ensure_bridge

# ---------------------------------------------------------------- packages
need_pkgs=()
[ -x /usr/bin/containerd ] && [ -x /usr/bin/ctr ] && [ -x /usr/bin/containerd-shim-runc-v2 ] || need_pkgs+=(containerd)
command -v runc >/dev/null || need_pkgs+=(runc)
[ -x /usr/lib/cni/bridge ] && [ -x /usr/lib/cni/host-local ] && [ -x /usr/lib/cni/loopback ] || need_pkgs+=(containernetworking-plugins)
[ -x /bin/busybox ] && file -L /bin/busybox 2>/dev/null | grep -q 'statically linked' || need_pkgs+=(busybox-static)
command -v openssl >/dev/null || need_pkgs+=(openssl)
command -v jq >/dev/null || need_pkgs+=(jq)
command -v curl >/dev/null || need_pkgs+=(curl)
command -v file >/dev/null || need_pkgs+=(file)
if [ ${#need_pkgs[@]} -gt 0 ]; then
  log "apt-get install ${need_pkgs[*]}"
  [ -n "$(ls -A /var/lib/apt/lists 2>/dev/null | grep -v lock)" ] || apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need_pkgs[@]}" >&2 \
    || { apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need_pkgs[@]}" >&2; }
fi
command -v go >/dev/null || die "go not found (expected /usr/local/go/bin/go)"

# ---------------------------------------------------------------- binaries
mkdir -p "$BIN" "$CACHE/images" "$RUN" "$STATE"
src_hash() { (cd "$1" && cat go.mod $(ls go.sum 2>/dev/null) *.go; go version) | sha256sum | cut -c1-16; }
build_go() { # name srcdir out ldflags
  local name=$1 src=$2 out=$3 ldflags=$4 h
  h=$(src_hash "$src")
  if [ -x "$out" ] && [ "$(cat "$out.hash" 2>/dev/null)" = "$h" ]; then return 0; fi
  [ "${K8S_LITE_SKIP_BUILD:-0}" = 1 ] && die "$name binary missing or stale and K8S_LITE_SKIP_BUILD=1"
  log "building $name (a cold build of k8s-lite takes ~7-8 min on 2 cores; log: $RUN/build-$name.log)"
  local t=$(date +%s)
  if ! (cd "$src" && GOCACHE=$K8S_LITE_GOCACHE CGO_ENABLED=0 GOFLAGS="-mod=readonly -buildvcs=false" \
        go build -trimpath -ldflags "$ldflags" -o "$out.new" .) >"$RUN/build-$name.log" 2>&1; then
    tail -30 "$RUN/build-$name.log" >&2; die "build of $name failed"
  fi
  mv "$out.new" "$out"; echo "$h" > "$out.hash"
  log "built $name in $(( $(date +%s) - t ))s ($(du -h "$out" | cut -f1))"
}
V=$K8S_VERSION; MINOR=$(echo "$V" | cut -d. -f2)
build_go k8s-lite "$K8S_LITE_DIR/hyperkube" "$K8S_BIN" \
  "-s -w -X k8s.io/component-base/version.gitVersion=$V -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$MINOR -X k8s.io/component-base/version.gitTreeState=clean -X k8s.io/client-go/pkg/version.gitVersion=$V -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=$MINOR"
build_go pause "$K8S_LITE_DIR/pause" "$BIN/pause" "-s -w"
for c in kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl etcd; do ln -sfn k8s-lite "$BIN/$c"; done
KUBECTL=$BIN/kubectl

# ---------------------------------------------------------------- images
# Contents only (not paths), so a checkout elsewhere reuses the images.
img_hash=$( (cat "$BIN/pause" /bin/busybox "$K8S_LITE_DIR/mkimage.sh"; echo "$PAUSE_IMAGE $TEST_IMAGE") | sha256sum | cut -c1-16)
if [ "$(cat "$CACHE/images/hash" 2>/dev/null)" != "$img_hash" ]; then
  log "building images $PAUSE_IMAGE $TEST_IMAGE"
  tmp=$(mktemp -d)
  mkdir -p "$tmp/pause" "$tmp/bb"/{bin,etc,tmp,proc,sys,dev,root,var,home}
  cp "$BIN/pause" "$tmp/pause/pause"
  cp /bin/busybox "$tmp/bb/bin/busybox"
  for a in $(/bin/busybox --list); do [ "$a" = busybox ] || ln -sf busybox "$tmp/bb/bin/$a"; done
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/home:/bin/false\n' > "$tmp/bb/etc/passwd"
  printf 'root:x:0:\nnobody:x:65534:\n' > "$tmp/bb/etc/group"
  chmod 1777 "$tmp/bb/tmp"
  bash "$K8S_LITE_DIR/mkimage.sh" "$PAUSE_IMAGE" "$tmp/pause" "$CACHE/images/pause.tar" '["/pause"]' null
  bash "$K8S_LITE_DIR/mkimage.sh" "$TEST_IMAGE" "$tmp/bb" "$CACHE/images/busybox.tar" null '["sh"]'
  rm -rf "$tmp"; echo "$img_hash" > "$CACHE/images/hash"
fi

# ---------------------------------------------------------------- pki
# Keys and kubeconfigs are written with umask 077 (only root reads them); the
# daemons started below get the usual 022 back.
umask 077
P=$RUN/pki
mkdir -p "$P"
if [ ! -s "$P/kubelet-server.crt" ]; then
  log "generating certificates"
  rm -f "$P"/*
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 3650 \
    -subj /CN=k8s-lite-ca -keyout "$P/ca.key" -out "$P/ca.crt" 2>/dev/null
  openssl genrsa -out "$P/sa.key" 2048 2>/dev/null
  openssl rsa -in "$P/sa.key" -pubout -out "$P/sa.pub" 2>/dev/null
  cert() { # name subject extensions
    openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "$2" \
      -keyout "$P/$1.key" -out "$P/$1.csr" 2>/dev/null
    openssl x509 -req -in "$P/$1.csr" -CA "$P/ca.crt" -CAkey "$P/ca.key" -CAcreateserial -days 3650 \
      -extfile <(printf '%s\n' "$3") -out "$P/$1.crt" 2>/dev/null
    rm -f "$P/$1.csr"
  }
  svc_ip=$(echo "$SERVICE_CIDR" | awk -F'[./]' '{print $1"."$2"."$3"."$4+1}')
  cert apiserver "/CN=kube-apiserver" "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,IP:127.0.0.1,IP:$svc_ip"
  cert kubelet-server "/CN=$NODE_NAME" "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=DNS:localhost,IP:127.0.0.1"
  client="basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth"
  cert admin "/O=system:masters/CN=kubernetes-admin" "$client"
  cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" "$client"
  cert controller-manager "/CN=system:kube-controller-manager" "$client"
  cert scheduler "/CN=system:kube-scheduler" "$client"
  cert kubelet "/O=system:nodes/CN=system:node:$NODE_NAME" "$client"
fi
b64() { base64 -w0 "$1"; }
kubeconfig() { # name user
  install -m 600 /dev/null "$RUN/$1.kubeconfig" # also when an older run left it readable
  cat > "$RUN/$1.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: k8s-lite
  cluster:
    server: https://127.0.0.1:$APISERVER_PORT
    certificate-authority-data: $(b64 "$P/ca.crt")
users:
- name: $2
  user:
    client-certificate-data: $(b64 "$P/$1.crt")
    client-key-data: $(b64 "$P/$1.key")
contexts:
- name: k8s-lite
  context: {cluster: k8s-lite, user: $2, namespace: default}
current-context: k8s-lite
EOF
}
kubeconfig admin kubernetes-admin
kubeconfig controller-manager system:kube-controller-manager
kubeconfig scheduler system:kube-scheduler
kubeconfig kubelet "system:node:$NODE_NAME"
umask 022

# ---------------------------------------------------------------- process helpers
close_inherited_fds() {
  local fd n
  for fd in /proc/$BASHPID/fd/*; do
    n=${fd##*/}
    if [ "$n" -gt 2 ] 2>/dev/null; then eval "exec $n>&-" 2>/dev/null || true; fi
  done
}
start() { # name cmd...
  local name=$1; shift
  : > "$RUN/$name.log"
  # Daemons outlive this script: every descriptor it inherited above 2 is
  # closed first, so a lock a caller holds (flock around `make test`, up.sh's
  # own on fd 9) is not held by the cluster for its whole life.
  (cd "$RUN" && close_inherited_fds && exec setsid "$@" >>"$RUN/$name.log" 2>&1 </dev/null) &
  echo $! > "$RUN/$name.pid"
  log "started $name (pid $(cat "$RUN/$name.pid"), log $RUN/$name.log)"
}
wait_for() { # name timeout_s description cmd...
  local name=$1 to=$2 what=$3; shift 3
  local end=$(( $(date +%s) + to ))
  until "$@" >/dev/null 2>&1; do
    if ! pid_alive "$name"; then tail -40 "$RUN/$name.log" >&2; die "$name exited while waiting for $what"; fi
    if [ "$(date +%s)" -ge "$end" ]; then tail -40 "$RUN/$name.log" >&2; die "timed out after ${to}s waiting for $what"; fi
    sleep 0.2
  done
  log "$what"
}

# ---------------------------------------------------------------- etcd
rm -rf "$RUN/etcd"
start etcd "$BIN/etcd" --name k8s-lite --data-dir "$RUN/etcd" \
  --listen-client-urls "http://127.0.0.1:$ETCD_CLIENT_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_CLIENT_PORT" \
  --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
  --initial-cluster "k8s-lite=http://127.0.0.1:$ETCD_PEER_PORT" \
  --unsafe-no-fsync --quota-backend-bytes 2147483648 --log-level warn
wait_for etcd 30 "etcd healthy" curl -sf --max-time 2 "http://127.0.0.1:$ETCD_CLIENT_PORT/health"

# ---------------------------------------------------------------- kube-apiserver
start kube-apiserver "$BIN/kube-apiserver" \
  --etcd-servers "http://127.0.0.1:$ETCD_CLIENT_PORT" \
  --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$APISERVER_PORT" \
  --tls-cert-file "$P/apiserver.crt" --tls-private-key-file "$P/apiserver.key" \
  --client-ca-file "$P/ca.crt" \
  --kubelet-client-certificate "$P/apiserver-kubelet-client.crt" --kubelet-client-key "$P/apiserver-kubelet-client.key" \
  --kubelet-certificate-authority "$P/ca.crt" --kubelet-preferred-address-types Hostname,InternalIP \
  --service-account-key-file "$P/sa.pub" --service-account-signing-key-file "$P/sa.key" \
  --service-account-issuer https://kubernetes.default.svc.cluster.local \
  --service-cluster-ip-range "$SERVICE_CIDR" \
  --authorization-mode AlwaysAllow --allow-privileged=true \
  --endpoint-reconciler-type none --profiling=false \
  --v "${K8S_LITE_V:-1}"
wait_for kube-apiserver 120 "kube-apiserver ready" curl_api /readyz

# ---------------------------------------------------------------- containerd + CNI
mkdir -p "$STATE/containerd" "$CTRD_STATE" "$STATE/cni/net.d" "$STATE/cni/ipam"
cat > "$RUN/containerd.toml" <<EOF
version = 2
root = "$STATE/containerd"
state = "$CTRD_STATE"
[grpc]
  address = "$CTRD_SOCK"
[ttrpc]
  address = "$CTRD_SOCK.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""
[plugins]
  [plugins."io.containerd.grpc.v1.cri"]
    sandbox_image = "$PAUSE_IMAGE"
    stream_server_address = "127.0.0.1"
    stream_server_port = "0"
    enable_selinux = false
    disable_apparmor = true
    restrict_oom_score_adj = true
    tolerate_missing_hugetlb_controller = true
    disable_hugetlb_controller = true
    netns_mounts_under_state_dir = true
    [plugins."io.containerd.grpc.v1.cri".containerd]
      snapshotter = "overlayfs"
      default_runtime_name = "runc"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
          SystemdCgroup = false
    # No registry is reachable: send every pull to a closed loopback port so a
    # missing image fails fast (ErrImagePull) without DNS or outside traffic.
    [plugins."io.containerd.grpc.v1.cri".registry]
      config_path = "$STATE/registry-hosts"
    [plugins."io.containerd.grpc.v1.cri".cni]
      bin_dir = "/usr/lib/cni"
      conf_dir = "$STATE/cni/net.d"
      max_conf_num = 1
  [plugins."io.containerd.internal.v1.opt"]
    path = "$STATE/containerd/opt"
EOF
# The bridge has the subnet's first address on the host side and pods route
# everything through it (a default route, as on a real cluster), but there is
# no masquerading and allow_bridge_forward drops whatever would be forwarded
# off the bridge -> pod traffic reaches pods and the host, never beyond.
cat > "$STATE/cni/net.d/10-k8s-lite.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "$CNI_NETWORK_NAME",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$CNI_BRIDGE",
      "isGateway": true,
      "isDefaultGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": "$STATE/cni/ipam",
        "ranges": [[{"subnet": "$POD_CIDR"}]]
      }
    }
  ]
}
EOF
for h in _default; do
  mkdir -p "$STATE/registry-hosts/$h"
  printf 'server = "http://127.0.0.1:1"\n[host."http://127.0.0.1:1"]\n  capabilities = ["pull", "resolve"]\n' > "$STATE/registry-hosts/$h/hosts.toml"
done
start containerd /usr/bin/containerd --config "$RUN/containerd.toml" --log-level warn
wait_for containerd 30 "containerd up" ctr -a "$CTRD_SOCK" version
for i in pause busybox; do ctr -a "$CTRD_SOCK" -n k8s.io images import "$CACHE/images/$i.tar" >/dev/null; done
log "images imported: $PAUSE_IMAGE $TEST_IMAGE"
# Extra images (e.g. mkimage-debian.sh) are imported while the rest starts.
extras=$(ls "$CACHE"/images/extra-*.tar 2>/dev/null || true)
extra_pid=
if [ -n "$extras" ]; then
  ( for i in $extras; do ctr -a "$CTRD_SOCK" -n k8s.io images import "$i" >/dev/null || exit 1; done ) 9>&- &
  extra_pid=$!
fi

# ---------------------------------------------------------------- controller-manager, scheduler
start kube-controller-manager "$BIN/kube-controller-manager" \
  --kubeconfig "$RUN/controller-manager.kubeconfig" \
  --secure-port 0 --leader-elect=false \
  --service-account-private-key-file "$P/sa.key" --root-ca-file "$P/ca.crt" \
  --use-service-account-credentials=false --allocate-node-cidrs=false \
  --node-monitor-grace-period 20s --profiling=false --v "${K8S_LITE_V:-1}"
start kube-scheduler "$BIN/kube-scheduler" \
  --kubeconfig "$RUN/scheduler.kubeconfig" \
  --secure-port 0 --leader-elect=false --profiling=false \
  --v "${K8S_LITE_V:-1}"

# ---------------------------------------------------------------- kubelet
mkdir -p "$STATE/kubelet" "$STATE/pod-logs"
cgroup_root_line=
if [ ! -e /sys/fs/cgroup/cgroup.controllers ]; then   # cgroup v1 / hybrid
  for h in /sys/fs/cgroup/*/; do
    [ -e "$h/cgroup.procs" ] && mkdir -p "$h$CGROUP_ROOT"
  done
  if [ -d "/sys/fs/cgroup/cpuset/$CGROUP_ROOT" ]; then
    cat /sys/fs/cgroup/cpuset/cpuset.cpus > "/sys/fs/cgroup/cpuset/$CGROUP_ROOT/cpuset.cpus"
    cat /sys/fs/cgroup/cpuset/cpuset.mems > "/sys/fs/cgroup/cpuset/$CGROUP_ROOT/cpuset.mems"
  fi
  cgroup_root_line="cgroupRoot: /$CGROUP_ROOT"
fi
cat > "$RUN/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: $KUBELET_PORT
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $KUBELET_HEALTHZ_PORT
tlsCertFile: $P/kubelet-server.crt
tlsPrivateKeyFile: $P/kubelet-server.key
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: $P/ca.crt}
authorization: {mode: AlwaysAllow}
containerRuntimeEndpoint: unix://$CTRD_SOCK
cgroupDriver: cgroupfs
$cgroup_root_line
failCgroupV1: false
failSwapOn: false
podLogsDir: $STATE/pod-logs
clusterDomain: cluster.local
resolvConf: /etc/resolv.conf
registerNode: true
rotateCertificates: false
serverTLSBootstrap: false
serializeImagePulls: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {"memory.available": "100Mi", "nodefs.available": "1%", "imagefs.available": "1%", "nodefs.inodesFree": "1%"}
shutdownGracePeriod: 0s
shutdownGracePeriodCriticalPods: 0s
syncFrequency: 10s
fileCheckFrequency: 10s
nodeStatusUpdateFrequency: 5s
nodeStatusReportFrequency: 1m
maxPods: 110
EOF
start kubelet "$BIN/kubelet" --config "$RUN/kubelet.yaml" --kubeconfig "$RUN/kubelet.kubeconfig" \
  --hostname-override "$NODE_NAME" --root-dir "$STATE/kubelet" --cert-dir "$STATE/kubelet/pki" \
  --v "${K8S_LITE_V:-1}"

wait_for kubelet 120 "node $NODE_NAME Ready and untainted" node_ready
sa_ready() { curl_api /api/v1/namespaces/default/serviceaccounts/default && curl_api /api/v1/namespaces/default/configmaps/kube-root-ca.crt; }
wait_for kube-controller-manager 60 "default ServiceAccount and kube-root-ca.crt present" sa_ready
pid_alive kube-scheduler || { tail -30 "$RUN/kube-scheduler.log" >&2; die "kube-scheduler died"; }
if [ -n "$extra_pid" ]; then wait "$extra_pid" || die "importing $extras failed"; log "extra images imported: $extras"; fi
log "cluster up; kubectl: $KUBECTL --kubeconfig $KUBECONFIG_ADMIN; test image: $TEST_IMAGE"
echo "$KUBECONFIG_ADMIN"
