// Command gate is sandgate's per-session egress gate: a sidecar that owns
// the sandbox's network namespace, installs and verifies owner-match
// firewall rules as root, drops to its own uid, fetches its policy from the
// control plane with its gate token, and proxies every request of the
// sandbox through an allowlist that swaps credential placeholders for real
// secrets at egress (CONTRACT §10, §11). It wires its parts by hand (no fx).
//
// Usage:
//
//	gate               run the gate, configured by the environment (gatewire.Env)
//	gate -healthcheck  exit 0 if the gate on GATE_ADDR is ready, 1 otherwise
//	gate -firewall     install and verify the firewall for GATE_UID, then exit
//	                   (Kubernetes' netsetup init container; the gate sidecar
//	                   then runs with GATE_FIREWALL=preinstalled)
//	gate version       print the version
//
// main stays small: the run logic (the startup order, the config and report
// loops) is app/gate's; here are the wiring (wire.go), the environment
// (env.go), the privilege drop and the healthcheck.
package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"go.opentelemetry.io/otel"

	"github.com/sandgate/sandgate/app/gate"
	"github.com/sandgate/sandgate/cmd/internal/versioncmd"
	"github.com/sandgate/sandgate/core/gatewire"
)

// version is stamped at build time: -ldflags "-X main.version=…".
var version = "dev"

const about = "gate runs sandgate's per-session egress gate when started without arguments " +
	"(configured by CONTROLPLANE_URL, GATE_TOKEN, GATE_SESSION_ID and the other GATE_* variables), " +
	"and `gate -healthcheck` exits 0 once it is ready."

func main() {
	os.Exit(realMain(os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// realMain dispatches on the command line and returns the exit code.
func realMain(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	switch {
	case len(args) == 0:
		return runGate(getenv, stderr)
	case len(args) == 1 && (args[0] == "-healthcheck" || args[0] == "--healthcheck"):
		return healthcheck(context.Background(), getenv, stderr)
	case len(args) == 1 && (args[0] == "-firewall" || args[0] == "--firewall"):
		return firewallOnly(getenv, installFirewall, stderr)
	default:
		return versioncmd.Run("gate", version, about, args, stdout, stderr)
	}
}

// runGate validates the environment, then serves until SIGTERM or SIGINT.
// Logs are JSON lines on stderr; GATE_TOKEN and secrets never reach them.
func runGate(getenv func(string) string, stderr io.Writer) int {
	log := slog.New(slog.NewJSONHandler(stderr, nil))
	s, err := gatewire.ParseEnv(getenv)
	if err != nil {
		log.Error("gate: invalid environment", "err", err)
		return 1
	}
	// The exporter reports failed exports here; the default handler would
	// print plain text lines among the JSON ones.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		log.Warn("telemetry", "err", err)
	}))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := gate.Serve(ctx, s, realDeps(s, log)); err != nil {
		log.Error("gate failed", "err", err)
		return 1
	}
	return 0
}

// firewallOnly is `gate -firewall`: the first step of C-FW-1 alone, for an
// init step that holds NET_ADMIN (and nothing else) so that the long-running
// gate holds no capability at all. It exits 0 only once the rules are
// installed and verified.
func firewallOnly(getenv func(string) string, install func(uid uint32) error, stderr io.Writer) int {
	log := slog.New(slog.NewJSONHandler(stderr, nil))
	uid, err := firewallEnv(getenv)
	if err != nil {
		log.Error("gate -firewall: invalid environment", "err", err)
		return 1
	}
	if err := install(uid); err != nil {
		log.Error("gate -firewall failed", "err", err)
		return 1
	}
	log.Info("firewall installed and verified", "gate_uid", uid)
	return 0
}
