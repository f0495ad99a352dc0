// Command gate will be sandgate's per-session egress gate: a sidecar that owns
// the sandbox's network namespace, installs and verifies owner-match firewall
// rules as root, drops to its own uid, fetches its policy from the executor
// with its gate token, and proxies every request through an allowlist that
// swaps credential placeholders for real secrets at egress. It wires its
// parts by hand (no fx).
//
// Today it only reports its version; the gate arrives with its own issue, and
// until then no subcommand pretends to exist.
package main

import (
	"os"

	"github.com/sandgate/sandgate/cmd/internal/versioncmd"
)

// version is stamped at build time: -ldflags "-X main.version=…".
var version = "dev"

func main() {
	os.Exit(versioncmd.Run("gate", version,
		"gate will run sandgate's per-session egress gate; for now it only reports its version.",
		os.Args[1:], os.Stdout, os.Stderr))
}
