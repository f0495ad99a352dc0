#!/usr/bin/env bash
# docker-gateway.sh NETWORK prints the IPv4 address of the host on a Docker
# bridge network: where containers on it reach the host (make run serves the
# gates' config endpoint there). The network's IPAM gateway when the engine
# records one; the default "bridge" of older engines (Debian's docker.io
# 20.10) records none, so then the address of the network's bridge interface.
set -euo pipefail
net=${1:?usage: docker-gateway.sh NETWORK}
gw=$(docker network inspect "$net" --format '{{range .IPAM.Config}}{{.Gateway}}{{end}}')
if [ -z "$gw" ]; then
	br=$(docker network inspect "$net" --format '{{index .Options "com.docker.network.bridge.name"}}')
	[ -n "$br" ] || br=br-$(docker network inspect "$net" --format '{{.Id}}' | cut -c1-12)
	gw=$(ip -4 -o addr show dev "$br" 2>/dev/null | awk '{ split($4, a, "/"); print a[1]; exit }')
fi
[ -n "$gw" ] || { echo "docker-gateway: network $net has no IPv4 gateway address" >&2; exit 1; }
echo "$gw"
