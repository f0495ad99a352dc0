# Shared settings for up.sh / down.sh (sourced, not executed).
# Every value can be overridden from the environment.
K8S_LITE_DIR=${K8S_LITE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}
K8S_VERSION=${K8S_VERSION:-v1.37.2}
# Cached build outputs and images (survive down.sh; delete to force a rebuild).
CACHE=${K8S_LITE_CACHE:-/var/cache/sandgate/k8s}
# Go build cache for the Kubernetes build (kept so later builds are incremental).
K8S_LITE_GOCACHE=${K8S_LITE_GOCACHE:-$CACHE/gocache}
# Logs, pid files, pki, kubeconfigs, etcd data, generated configs.
RUN=${K8S_LITE_RUN:-/tmp/k8s-lite}
# containerd root (image store) and kubelet root.
STATE=${K8S_LITE_STATE:-/var/lib/k8s-lite}
# containerd state dir + CRI socket.
CTRD_STATE=${K8S_LITE_CTRD_STATE:-/run/k8s-lite/containerd}
CTRD_SOCK=$CTRD_STATE/containerd.sock

BIN=$CACHE/bin
K8S_BIN=$BIN/k8s-lite
KUBECONFIG_ADMIN=$RUN/admin.kubeconfig

# Loopback-only endpoints.
APISERVER_PORT=${K8S_LITE_APISERVER_PORT:-16443}
ETCD_CLIENT_PORT=${K8S_LITE_ETCD_PORT:-12379}
ETCD_PEER_PORT=${K8S_LITE_ETCD_PEER_PORT:-12380}
KUBELET_PORT=${K8S_LITE_KUBELET_PORT:-10250}
KUBELET_HEALTHZ_PORT=${K8S_LITE_KUBELET_HEALTHZ_PORT:-10248}
# The node is called "localhost" so that the API server reaches the kubelet
# (exec/attach/logs) through the Hostname address, i.e. over loopback.
NODE_NAME=localhost

# Pod network: a Linux bridge with a host address (POD_CIDR's first, 10.244.0.1
# by default; up.sh creates both before the first pod, so tests can listen
# there), which is also the pods' default route, and no NAT. Two FORWARD
# rules (up.sh) accept bridge-to-bridge traffic and drop everything else
# leaving the bridge, so pods reach each other and the host's own addresses,
# nothing beyond the host.
CNI_BRIDGE=${K8S_LITE_CNI_BRIDGE:-k8slite0}
POD_CIDR=${K8S_LITE_POD_CIDR:-10.244.0.0/24}
SERVICE_CIDR=${K8S_LITE_SERVICE_CIDR:-10.96.0.0/24}
CNI_NETWORK_NAME=k8s-lite

PAUSE_IMAGE=k8s-lite.local/pause:1
TEST_IMAGE=k8s-lite.local/busybox:1

# Pods' cgroups live under /sys/fs/cgroup/<controller>/$CGROUP_ROOT (cgroup v1),
# so down.sh can find and kill every pod process, even orphaned ones.
CGROUP_ROOT=${K8S_LITE_CGROUP_ROOT:-k8s-lite}

COMPONENTS="etcd kube-apiserver containerd kube-controller-manager kube-scheduler kubelet"
