#!/usr/bin/env bash
# ensure-docker.sh makes sure a Docker engine answers, installing and starting
# one on a Debian machine where we are root. It is idempotent and fast when an
# engine already answers (one `docker info`).
#
#   - DOCKER_HOST is honoured: if it names an engine that answers, that engine is
#     used; if it names one that does not, we fail rather than start a local
#     daemon the clients would not talk to.
#   - No dockerd binary: as root with apt, install docker.io (apt-get update
#     only when the package lists do not know it); otherwise say what is missing.
#   - dockerd is started only when none is running (pid file and process table,
#     under a lock, so two concurrent runs never start a second daemon), detached
#     so it outlives this script, and waited for (bounded).
set -euo pipefail

readonly DEFAULT_SOCK=/var/run/docker.sock
readonly PIDFILE=/var/run/docker.pid
readonly LOG=/var/log/dockerd.log
readonly LOCK=/var/lock/sandgate-ensure-docker.lock
readonly WAIT_SECONDS=${SANDGATE_DOCKER_WAIT:-60}

log() { printf 'ensure-docker: %s\n' "$*" >&2; }
die() {
	log "$*"
	exit 1
}

# socket prints the unix socket the clients will use, or nothing for a
# non-unix DOCKER_HOST (tcp://, ssh://).
socket() {
	case "${DOCKER_HOST:-}" in
	'') printf '%s\n' "$DEFAULT_SOCK" ;;
	unix://*) printf '%s\n' "${DOCKER_HOST#unix://}" ;;
	esac
}

# answers reports whether an engine answers, asking the docker client if there
# is one and the socket directly with curl otherwise.
answers() {
	if command -v docker >/dev/null 2>&1; then
		timeout 20 docker info >/dev/null 2>&1 && return 0
	fi
	local sock
	sock=$(socket)
	if [[ -n $sock && -S $sock ]] && command -v curl >/dev/null 2>&1; then
		curl -fsS --max-time 5 --unix-socket "$sock" http://localhost/_ping >/dev/null 2>&1 && return 0
	fi
	return 1
}

# remote reports whether DOCKER_HOST names an engine other than the local
# default socket, which this script must not try to start.
remote() {
	local sock
	sock=$(socket)
	[[ $sock != "$DEFAULT_SOCK" && $sock != /run/docker.sock ]]
}

# running_pid prints the pid of a dockerd already running on this machine, if
# any: the one in the pid file when it is alive and is dockerd, else any
# process named dockerd.
running_pid() {
	local pid
	if [[ -r $PIDFILE ]]; then
		pid=$(<"$PIDFILE")
		if [[ $pid =~ ^[0-9]+$ && -r /proc/$pid/comm && $(</proc/"$pid"/comm) == dockerd ]]; then
			printf '%s\n' "$pid"
			return 0
		fi
	fi
	pgrep -x dockerd | head -n1 || true
}

install_engine() {
	local missing=()
	[[ $(id -u) -eq 0 ]] || missing+=("root (to install docker.io and start dockerd)")
	command -v apt-get >/dev/null 2>&1 || missing+=("apt-get (a Debian-like system)")
	if ((${#missing[@]})); then
		die "no dockerd binary and no engine answers; missing: ${missing[*]}." \
			"Install Docker Engine yourself and start it, or set DOCKER_HOST to one that answers."
	fi
	export DEBIAN_FRONTEND=noninteractive NEEDRESTART_SUSPEND=1
	# Not `| grep -q`: under pipefail its early exit can fail the pipeline.
	if [[ $(apt-cache policy docker.io 2>/dev/null) != *"Candidate: "[0-9]* ]]; then
		log "apt-get update (the package lists do not know docker.io)"
		apt-get update -q
	fi
	log "apt-get install docker.io"
	if ! apt-get install -y -q docker.io; then
		log "install failed; refreshing the package lists once and retrying"
		apt-get update -q
		apt-get install -y -q docker.io
	fi
	command -v dockerd >/dev/null 2>&1 || die "docker.io installed but dockerd is not on PATH"
}

wait_for_engine() {
	local pid=$1 i
	for ((i = 0; i < WAIT_SECONDS * 2; i++)); do
		answers && return 0
		if [[ -n $pid ]] && ! kill -0 "$pid" 2>/dev/null; then
			# setsid may have forked: follow the daemon, if one runs, by name.
			pid=$(running_pid)
			[[ -n $pid ]] && continue
			log "dockerd exited; last lines of $LOG:"
			tail -n 30 "$LOG" >&2 || true
			exit 1
		fi
		sleep 0.5
	done
	log "no answer from the engine after ${WAIT_SECONDS}s; last lines of $LOG:"
	tail -n 30 "$LOG" >&2 || true
	exit 1
}

main() {
	answers && return 0
	if remote; then
		die "DOCKER_HOST=$DOCKER_HOST does not answer; not starting a local dockerd it would not reach"
	fi
	command -v dockerd >/dev/null 2>&1 || install_engine
	[[ $(id -u) -eq 0 ]] || die "dockerd is installed but not answering, and starting it needs root"

	# The lock makes "is one running? no: start one" atomic across concurrent runs.
	exec 9>"$LOCK"
	flock -w "$WAIT_SECONDS" 9 || die "could not take $LOCK within ${WAIT_SECONDS}s"
	answers && return 0

	local pid
	pid=$(running_pid)
	if [[ -n $pid ]]; then
		log "dockerd already running (pid $pid); waiting for it to answer"
	else
		log "starting dockerd (log: $LOG)"
		setsid nohup dockerd >"$LOG" 2>&1 </dev/null 9>&- &
		pid=$!
	fi
	wait_for_engine "$pid"
	log "engine ready: $(docker version --format '{{.Server.Version}} (API {{.Server.APIVersion}})' 2>/dev/null || echo answering)"
}

main "$@"
# SANDGATE_GVISOR=1 asks for gVisor too: runsc built and registered as the
# engine's "runsc" runtime (ensure-gvisor.sh says how).
if [[ ${SANDGATE_GVISOR:-} == 1 ]]; then
	exec "$(dirname "${BASH_SOURCE[0]}")/ensure-gvisor.sh"
fi
