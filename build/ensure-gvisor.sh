#!/usr/bin/env bash
# ensure-gvisor.sh makes sure the local Docker engine offers gVisor as the
# runtime "runsc" (what SANDGATE_GVISOR_RUNTIME names by default), for the
# gVisor sessions of issue 16. Idempotent, and one `docker info` when the
# runtime is there already. build/ensure-docker.sh runs it when
# SANDGATE_GVISOR=1; `make gvisor` (a prerequisite of `make integration`) too.
#
#   - runsc is built from gVisor's Go module at a pinned version, statically
#     (CGO_ENABLED=0: the Sentry re-executes itself inside a chroot that holds
#     no dynamic loader), and cached per machine under $CACHE (about 2 min cold,
#     nothing warm). Debian's `runsc` package (2022-12) is not used: its
#     statx answers EINVAL to coreutils 9.1 and its netstack cannot start on
#     these machines (docs/DIVERGENCES.md).
#   - It is registered in /etc/docker/daemon.json under "runtimes" (other keys
#     kept; the file is rewritten through a temporary file) with the flags the
#     Docker provider checks on every gVisor create (adapters/docker
#     isolation.go says why each): --network=host, --overlay2=none,
#     --file-access=shared.
#   - dockerd takes a new runtime on SIGHUP: no restart, running containers
#     untouched. A remote engine (DOCKER_HOST) is only checked, never changed.
set -euo pipefail

readonly RUNTIME=${SANDGATE_GVISOR_RUNTIME:-runsc}
readonly VERSION=v0.0.0-20260905035102-160fafc42237
readonly CACHE=${SANDGATE_GVISOR_CACHE:-/var/cache/sandgate/gvisor}/$VERSION
readonly CONFIG=/etc/docker/daemon.json
readonly PIDFILE=/var/run/docker.pid

log() { printf 'ensure-gvisor: %s\n' "$*" >&2; }
die() {
	log "$*"
	exit 1
}

# registered prints the path the engine runs for $RUNTIME (nothing: none).
registered() {
	docker info --format "{{with index .Runtimes \"$RUNTIME\"}}{{.Path}}{{end}}" 2>/dev/null || true
}

if [[ -n ${DOCKER_HOST:-} ]]; then
	[[ -n $(registered) ]] && exit 0
	die "the engine at DOCKER_HOST has no runtime $RUNTIME; register runsc there (docs/OPERATIONS.md)"
fi
[[ $(registered) == "$CACHE/runsc" ]] && exit 0
[[ $(id -u) -eq 0 ]] || die "the engine has no runtime $RUNTIME built here; as root run $0, or register a runsc yourself (docs/OPERATIONS.md)"

if [[ ! -x $CACHE/runsc ]]; then
	command -v go >/dev/null 2>&1 || die "go is needed to build runsc $VERSION"
	log "building runsc $VERSION into $CACHE (about 2 minutes, once per machine)"
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	CGO_ENABLED=0 GOBIN=$tmp go install -trimpath -ldflags='-s -w' "gvisor.dev/gvisor/runsc@$VERSION"
	mkdir -p "$CACHE"
	mv "$tmp/runsc" "$CACHE/runsc"
fi

mkdir -p "$(dirname "$CONFIG")"
/usr/bin/python3 - "$CONFIG" "$RUNTIME" "$CACHE/runsc" <<'PY'
import json, os, sys
config, name, path = sys.argv[1:]
doc = {}
if os.path.exists(config):
    with open(config) as f:
        text = f.read().strip()
    doc = json.loads(text) if text else {}
doc.setdefault("runtimes", {})[name] = {"path": path, "runtimeArgs": ["--network=host", "--overlay2=none", "--file-access=shared"]}
tmp = config + ".sandgate-tmp"
with open(tmp, "w") as f:
    json.dump(doc, f, indent=2)
    f.write("\n")
os.replace(tmp, config)
PY
pid=$(<"$PIDFILE") || die "no $PIDFILE: cannot tell dockerd to reload $CONFIG"
log "registered $RUNTIME ($CACHE/runsc) in $CONFIG; reloading dockerd (pid $pid)"
kill -HUP "$pid"
for _ in $(seq 50); do
	[[ $(registered) == "$CACHE/runsc" ]] && exit 0
	sleep 0.2
done
die "dockerd did not list $RUNTIME at $CACHE/runsc after a reload; see its log"
