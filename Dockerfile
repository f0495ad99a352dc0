# sandgate images: `docker build --target executor .`, `--target gate` and
# `--target agent`.
#
# Plain Dockerfile syntax on purpose (no BuildKit-only features), so the
# classic builder works too: DOCKER_BUILDKIT=0 with a docker CLI that has no
# buildx. On machines that cannot pull, build/images.sh makes the two base
# images locally under these same names.

FROM golang:1.26-bookworm AS build
WORKDIR /src
# Modules first, in their own layer: it is reused until go.mod or go.sum change.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ENV CGO_ENABLED=0
RUN go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/ ./cmd/executor ./cmd/gate ./cmd/agent \
	&& chmod 0755 /out/agent

# The in-sandbox agent (issue 13): its static binary alone, root-owned and
# 0755 (COPY keeps the build stage's mode; --chmod would need BuildKit). A
# provider copies it out once per daemon into the volume it mounts read-only
# in every sandbox, so the image never runs and needs nothing else. Not the
# last stage: a plain `docker build .` still builds the gate.
FROM scratch AS agent
COPY --from=build /out/agent /sandgate-agent/sandgate-agent

# The executor: sandgate's service and CLI.
FROM debian:bookworm AS executor
COPY --from=build /out/executor /usr/local/bin/executor
ENTRYPOINT ["/usr/local/bin/executor"]

# What the gate needs besides its binary: the iptables binaries that
# go-iptables executes (Debian's package ships both the nft and the legacy
# backends) and the CA bundle it verifies upstream certificates against. A
# stage of its own so that the firewall tests can run in it without a gate.
FROM debian:bookworm AS gate-runtime
RUN apt-get update -q \
	&& DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends iptables ca-certificates \
	&& rm -rf /var/lib/apt/lists/*

# The per-session egress gate. It starts as root to install its firewall and
# then drops to its own uid (CONTRACT C-FW-1).
FROM gate-runtime AS gate
COPY --from=build /out/gate /usr/local/bin/gate
# Healthy only once the first config is in force and the CA file is written
# (B-3). The providers set their own probe timing at create; this default
# serves a plain `docker run`.
HEALTHCHECK --interval=5s --timeout=4s --retries=3 CMD ["/usr/local/bin/gate", "-healthcheck"]
ENTRYPOINT ["/usr/local/bin/gate"]
