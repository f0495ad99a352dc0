# sandgate. `make test` is what CI runs (.ci/run); `make check` runs the linters.
# `make bench` measures against the raw engine (docs/PERFORMANCE.md); `make run`
# runs the executor on this machine.

SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := test
MAKEFLAGS += --no-print-directory

GO ?= go
MODULE := github.com/sandgate/sandgate
BIN := $(CURDIR)/.bin
COVER := $(CURDIR)/.cover
# Core is pure logic: it stays covered at this percentage or better.
CORE_COVERAGE_MIN := 90
GOLANGCI_LINT_VERSION := v2.15.0
GOLANGCI_LINT := $(BIN)/golangci-lint-$(GOLANGCI_LINT_VERSION)
# Under CI every unit test really runs: no result comes from the test cache,
# since the in-sandbox scripts they run depend on the host (bash, mounts).
UNIT_FLAGS := $(if $(filter true,$(CI)),-count=1)

.PHONY: test fmt vet unit coverage integration docker images gate-image agent-image postgres sdk-tools gvisor check tidy lint shellcheck bench run \
	helm k8s-up k8s-up-for-test k8s-down test-kubernetes

## test: gofmt, vet, unit tests with -race (the Helm chart's template tests
## among them), core coverage gate, then a Docker engine, the local images,
## the test cluster and the integration tests (Docker, PostgreSQL and
## Kubernetes). The cluster is torn down afterwards if this run started it
## (always the case in CI, which must leave nothing running); one that was
## already up stays up. K8S_KEEP=1 keeps it either way (a warm start costs ~4 s,
## an idle cluster ~850 MiB).
test: fmt vet coverage images gate-image agent-image
	@was_up=0; if build/k8s/up.sh --check 2>/dev/null; then was_up=1; fi; \
	trap 'if [ $$was_up = 0 ] && [ "$(K8S_KEEP)" != 1 ]; then build/k8s/down.sh; fi' EXIT; \
	$(MAKE) k8s-up-for-test && $(MAKE) integration

fmt:
	@files=$$(gofmt -l .); \
	if [ -n "$$files" ]; then echo "gofmt: unformatted files (run gofmt -w):"; echo "$$files"; exit 1; fi

# The agent runs inside sandboxes of either architecture: its arm64 build
# must keep compiling (static, as the Dockerfile builds it).
vet:
	$(GO) vet ./...
	$(GO) vet -tags integration ./...
	CGO_ENABLED=0 GOARCH=arm64 $(GO) build -o /dev/null ./cmd/agent

unit: helm
	@mkdir -p $(COVER)
	$(GO) test -race $(UNIT_FLAGS) -covermode=atomic -coverprofile=$(COVER)/unit.out ./...

# Coverage of core/ alone, from the unit run's profile; packages without tests
# count as 0 %.
coverage: unit
	@grep -E '^mode:|^$(MODULE)/core/' $(COVER)/unit.out >$(COVER)/core.out
	@total=$$($(GO) tool cover -func=$(COVER)/core.out | awk '$$1 == "total:" { sub(/%/, "", $$NF); print $$NF }'); \
	echo "core coverage: $$total % (minimum $(CORE_COVERAGE_MIN) %)"; \
	awk -v t="$$total" -v min=$(CORE_COVERAGE_MIN) 'BEGIN { exit !(t + 0 >= min) }' || \
		{ echo "core coverage $$total % is below $(CORE_COVERAGE_MIN) %"; exit 1; }

# -count=1: results that depend on a live engine must not come from the cache.
# -timeout 40m: a package's whole run (e2e's load test, the chart's image
# build and install) outlasts go test's 10-minute default on two cores. The
# Kubernetes conformance suite runs alone, after the rest: its deadline rows
# count from the call, and an exec's set-up through the API server and the
# kubelet takes seconds on a two-core machine busy with the Docker suites.
# The packages are those with integration-tagged test files (e2e has no
# other file, so a plain `go list` would drop it silently); the rest ran in
# `unit` already, and running their timing rows again beside the Docker
# suites on two cores only makes them flaky.
# Test containers carry the label dev.sandgate.test: what a crashed earlier
# run left is removed first (so it never trips this run), and nothing may be
# left behind afterwards (every test removes what it labelled).
integration: postgres sdk-tools gvisor
	@stale=$$(docker ps -aq --filter label=dev.sandgate.test); \
	if [ -n "$$stale" ]; then echo "removing test containers of an earlier run"; docker rm -f -v $$stale >/dev/null || true; fi
	$(GO) test -race -count=1 -timeout 40m -tags integration $$(grep -rl --include='*_test.go' '^//go:build integration' . | xargs -n1 dirname | sort -u | grep -v '^./adapters/kubernetes$$')
	$(GO) test -race -count=1 -timeout 40m -tags integration ./adapters/kubernetes/...
	@left=$$(docker ps -aq --filter label=dev.sandgate.test); \
	if [ -n "$$left" ]; then echo "test containers left behind:"; docker ps -a --filter label=dev.sandgate.test; exit 1; fi

## docker: make sure a Docker engine answers (installs and starts one as root).
docker:
	build/ensure-docker.sh

## postgres: make sure the throwaway PostgreSQL of the token-store tests
## runs on 127.0.0.1:$(POSTGRES_PORT) (installs Debian's postgresql as root).
POSTGRES_PORT ?= 55432
export SANDGATE_TEST_POSTGRES_PORT := $(POSTGRES_PORT)
export SANDGATE_TEST_POSTGRES_DSN ?= postgres://postgres@127.0.0.1:$(POSTGRES_PORT)/postgres?sslmode=disable
postgres:
	build/ensure-postgres.sh >/dev/null

## gvisor: the Docker engine offers runsc (builds a pinned runsc once per
## machine and registers it in /etc/docker/daemon.json as root;
## docs/OPERATIONS.md).
gvisor: docker
	build/ensure-gvisor.sh

## sdk-tools: what the SDKs' suites need (Debian's python3-pytest, -httpx,
## -websockets; node and npm), installed or named.
sdk-tools:
	build/ensure-sdk-tools.sh

## images: the local base images (debian:bookworm, busybox:1.35,
## golang:1.26-bookworm), built only when missing.
images: docker
	build/images.sh

## gate-image: the gate of this tree (`docker build --target gate`, offline
## from the local base images) as sandgate/gate:dev, and its runtime stage as
## sandgate/gate-runtime:dev, in which the firewall tests run. The classic
## builder, since the docker CLI here may have no buildx; unchanged layers come
## from its cache.
GATE_IMAGE ?= sandgate/gate:dev
export SANDGATE_TEST_GATE_IMAGE := $(GATE_IMAGE)
gate-image: images
	DOCKER_BUILDKIT=0 docker build -q --target gate -t $(GATE_IMAGE) . >/dev/null
	DOCKER_BUILDKIT=0 docker build -q --target gate-runtime -t sandgate/gate-runtime:dev . >/dev/null

## agent-image: the in-sandbox agent of this tree (`docker build --target
## agent`, a scratch image holding /sandgate-agent/sandgate-agent) as
## sandgate/agent:dev, built like gate-image.
AGENT_IMAGE ?= sandgate/agent:dev
export SANDGATE_TEST_AGENT_IMAGE := $(AGENT_IMAGE)
agent-image: images
	DOCKER_BUILDKIT=0 docker build -q --target agent -t $(AGENT_IMAGE) . >/dev/null

## k8s-up: the test cluster of build/k8s (built from the Go module proxy on
## first use, cached in /var/cache/sandgate/k8s; a no-op when up) with the
## images the tests run imported from Docker. Prints the line to eval:
## eval "$$(make -s k8s-up)". Tests find the kubeconfig in
## SANDGATE_TEST_KUBECONFIG (exported to every test by this Makefile).
K8S_RUN := $(or $(K8S_LITE_RUN),/tmp/k8s-lite)
K8S_CACHE := $(or $(K8S_LITE_CACHE),/var/cache/sandgate/k8s)
export SANDGATE_TEST_KUBECONFIG ?= $(K8S_RUN)/admin.kubeconfig
export SANDGATE_TEST_KUBECTL ?= $(K8S_CACHE)/bin/kubectl
export SANDGATE_TEST_KUBELET_ROOT ?= $(or $(K8S_LITE_STATE),/var/lib/k8s-lite)/kubelet
K8S_IMAGES ?= debian:bookworm $(GATE_IMAGE) $(AGENT_IMAGE)
k8s-up: gate-image agent-image
	@build/k8s/up.sh >/dev/null
	@build/k8s/import-images.sh $(K8S_IMAGES)
	@echo "export KUBECONFIG=$(SANDGATE_TEST_KUBECONFIG)"

# make test's cluster: under CI=true one that does not come up fails the run;
# elsewhere it is reported and the Kubernetes tests skip with the reason.
k8s-up-for-test:
	@if ! $(MAKE) -s k8s-up >/dev/null; then \
		if [ "$(CI)" = true ]; then echo "k8s-up: the test cluster did not come up"; exit 1; fi; \
		echo "k8s-up: the test cluster did not come up; the Kubernetes tests will skip"; \
	fi

## k8s-down: stop the test cluster (only what build/k8s/up.sh started); the
## cache of binaries and images stays.
k8s-down:
	build/k8s/down.sh

## test-kubernetes: the Kubernetes integration tests alone, on the cluster.
K8S_TEST_PKGS := $(if $(wildcard adapters/kubernetes),./adapters/kubernetes/...) ./deploy/...
test-kubernetes: k8s-up postgres helm
	$(GO) test -race -count=1 -timeout 40m -tags integration $(K8S_TEST_PKGS)

## helm: the helm binary of the chart tests (deploy/helm), built from the Go
## module proxy; the version is in the file name, like golangci-lint's.
HELM_VERSION := v3.22.0
HELM := $(BIN)/helm-$(HELM_VERSION)
export SANDGATE_HELM := $(HELM)
helm: $(HELM)
$(HELM):
	@mkdir -p $(BIN)
	GOBIN=$(BIN) $(GO) install helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)
	mv $(BIN)/helm $@

## run: `executor serve` on 127.0.0.1:7070 (SANDGATE_LISTEN) with SQLite,
## the secrets key and the checkpoints under ./.sandgate/, after Docker, the base images, the
## gate image and the in-sandbox agent's image. The API stays on loopback; the gates, on the Docker network,
## reach the executor's gate config endpoint alone at that network's gateway
## (SANDGATE_GATE_LISTEN, port RUN_GATE_PORT). Any SANDGATE_* set in the
## environment wins.
RUN_GATE_PORT ?= 7071
run: gate-image agent-image
	$(GO) build -o $(BIN)/executor ./cmd/executor
	@net=$${SANDGATE_GATE_NETWORK:-bridge}; \
	gw=$$(build/docker-gateway.sh "$$net") || \
		{ echo "run: set SANDGATE_GATE_LISTEN and SANDGATE_CONTROLPLANE_URL to an address gates on $$net reach"; exit 1; }; \
	export SANDGATE_GATE_IMAGE="$${SANDGATE_GATE_IMAGE-$(GATE_IMAGE)}"; \
	export SANDGATE_AGENT_IMAGE="$${SANDGATE_AGENT_IMAGE-$(AGENT_IMAGE)}"; \
	export SANDGATE_GATE_LISTEN="$${SANDGATE_GATE_LISTEN:-$$gw:$(RUN_GATE_PORT)}"; \
	export SANDGATE_CONTROLPLANE_URL="$${SANDGATE_CONTROLPLANE_URL:-http://$$gw:$(RUN_GATE_PORT)}"; \
	export SANDGATE_CHECKPOINT_DIR="$${SANDGATE_CHECKPOINT_DIR:-./.sandgate/checkpoints}"; \
	exec $(BIN)/executor serve

## bench: every Docker row of docs/PERFORMANCE.md against its raw-engine
## baseline, interleaved in one run; prints one line per row and writes
## bench/results.json (BENCH_OUT to change it, BENCH_ROWS to pick rows).
## Not part of `test`: benchmarks are measurements, not timed tests.
BENCH_OUT ?= bench/results.json
bench: images agent-image gvisor
	$(GO) run ./bench -out $(BENCH_OUT) $(if $(BENCH_ROWS),-rows $(BENCH_ROWS))

## check: golangci-lint, vet, gofmt, go mod tidy and shellcheck. govulncheck is
## left out on purpose: its vulnerability database is unreachable from these
## machines; run it where it can be reached.
check: fmt vet tidy lint shellcheck

tidy:
	$(GO) mod tidy -diff

lint: $(GOLANGCI_LINT)
	$(GOLANGCI_LINT) run ./...

## shellcheck: lint the in-sandbox scripts (core/sandbox/shell) with Debian's
## shellcheck package (0.9.0 on bookworm), installed with apt-get when missing
## and running as root. Their behaviour is tested by core/sandbox's unit tests,
## which run them with the host's bash and perl.
shellcheck:
	@if ! command -v shellcheck >/dev/null; then \
		if [ "$$(id -u)" != 0 ]; then \
			echo "shellcheck is missing: install Debian's shellcheck package (apt-get install shellcheck) or run make check as root" >&2; \
			exit 1; \
		fi; \
		apt-get install -y -qq --no-install-recommends shellcheck >/dev/null 2>&1 || \
			{ apt-get update -qq && apt-get install -y -qq --no-install-recommends shellcheck >/dev/null; }; \
	fi
	shellcheck core/sandbox/shell/*.sh

# The version is in the file name, so changing GOLANGCI_LINT_VERSION installs
# the new one and a stale binary is never used.
$(GOLANGCI_LINT):
	@mkdir -p $(BIN)
	GOBIN=$(BIN) $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	mv $(BIN)/golangci-lint $@
