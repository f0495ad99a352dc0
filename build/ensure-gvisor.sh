#!/usr/bin/env bash
# ensure-gvisor.sh makes sure the local Docker engine offers gVisor as the
# runtime "runsc" (what SANDGATE_GVISOR_RUNTIME names by default), for the
# gVisor sessions of issue 16. Idempotent, and one `docker info` when the
# runtime is there already.
#
#   - runsc is Debian's `runsc` package, installed with apt (root only).
#   - It is registered in /etc/docker/daemon.json under "runtimes" (other
#     keys kept; the file is rewritten through a temporary file), with
#     runsc's `--network=host`: its default netstack (`--network=sandbox`)
#     refuses to start on these machines ("cannot run with network enabled
#     in root network namespace", docs/DIVERGENCES.md). With host, the
#     Sentry makes the socket calls in the container's own namespace: none
#     for an ungated limited sandbox, the bridge for an unrestricted one.
#   - dockerd takes a new runtime on SIGHUP: no restart, running containers
#     untouched. A remote engine (DOCKER_HOST) is only checked, never changed.
set -euo pipefail

readonly RUNTIME=${SANDGATE_GVISOR_RUNTIME:-runsc}
readonly CONFIG=/etc/docker/daemon.json
readonly PIDFILE=/var/run/docker.pid

log() { printf 'ensure-gvisor: %s\n' "$*" >&2; }
die() {
	log "$*"
	exit 1
}

listed() { docker info --format '{{json .Runtimes}}' 2>/dev/null | grep -q "\"$RUNTIME\""; }

listed && exit 0
[[ -z ${DOCKER_HOST:-} ]] || die "the engine at DOCKER_HOST has no runtime $RUNTIME; register runsc there (docs/OPERATIONS.md)"
[[ $(id -u) -eq 0 ]] || die "the engine has no runtime $RUNTIME; as root: apt-get install runsc, then register it in $CONFIG (docs/OPERATIONS.md)"
if ! command -v runsc >/dev/null 2>&1; then
	log "apt-get install runsc"
	export DEBIAN_FRONTEND=noninteractive NEEDRESTART_SUSPEND=1
	apt-get install -y -q runsc >/dev/null || { apt-get update -q >/dev/null && apt-get install -y -q runsc >/dev/null; }
fi
path=$(command -v runsc)
mkdir -p "$(dirname "$CONFIG")"
/usr/bin/python3 - "$CONFIG" "$RUNTIME" "$path" <<'PY'
import json, os, sys
config, name, path = sys.argv[1:]
doc = {}
if os.path.exists(config):
    with open(config) as f:
        text = f.read().strip()
    doc = json.loads(text) if text else {}
doc.setdefault("runtimes", {})[name] = {"path": path, "runtimeArgs": ["--network=host"]}
tmp = config + ".sandgate-tmp"
with open(tmp, "w") as f:
    json.dump(doc, f, indent=2)
    f.write("\n")
os.replace(tmp, config)
PY
pid=$(<"$PIDFILE") || die "no $PIDFILE: cannot tell dockerd to reload $CONFIG"
log "registered $RUNTIME ($path) in $CONFIG; reloading dockerd (pid $pid)"
kill -HUP "$pid"
for _ in $(seq 50); do
	listed && exit 0
	sleep 0.2
done
die "dockerd did not list $RUNTIME after a reload; see its log"
