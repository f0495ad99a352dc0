#!/usr/bin/env bash
# ensure-sdk-tools.sh makes sure the SDKs' test suites can run: Debian's
# python3 with pytest, httpx and websockets (the Python SDK's only
# dependencies, so that it installs and tests offline), and node with npm
# ≥ 20.3 (the TypeScript SDK and the MCP client test install their packages with
# npm ci themselves). Missing Debian packages are installed with apt (root
# only); anything else missing is named, with what to do, and fails.
set -euo pipefail

log() { printf 'ensure-sdk-tools: %s\n' "$*" >&2; }

# The Python SDK is tested with Debian's interpreter: a python3 earlier on
# PATH (pyenv, a venv) does not see Debian's packages.
readonly PY=/usr/bin/python3
readonly PKGS=(python3-pytest python3-httpx python3-websockets)

if ! "$PY" -c 'import pytest, httpx, websockets' 2>/dev/null; then
	if [[ $(id -u) != 0 ]]; then
		log "missing: ${PKGS[*]}; run as root: apt-get install -y ${PKGS[*]}"
		exit 1
	fi
	log "installing ${PKGS[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${PKGS[@]}" >/dev/null ||
		{ apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${PKGS[@]}" >/dev/null; }
fi
for tool in node npm; do
	if ! command -v "$tool" >/dev/null; then
		log "missing: $tool (Node.js 20 or newer with npm): install Debian's nodejs and npm packages"
		exit 1
	fi
done
# The TypeScript SDK needs AbortSignal.any: Node.js 20.3 or newer.
if ! node -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 20 || (a === 20 && b >= 3) ? 0 : 1)'; then
	log "node $(node --version) is too old: the TypeScript SDK needs Node.js 20.3 or newer"
	exit 1
fi
