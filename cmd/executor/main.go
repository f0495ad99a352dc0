// Command executor will be sandgate's service and its CLI: `executor serve`
// will expose the sandbox API over HTTP to an orchestrator, host the gate's
// config endpoint and reap idle sandboxes, and the other subcommands will
// drive that service by hand (create, exec, cp, export, rm, ls). It is the
// only place that will wire modules with fx.
//
// Today it only reports its version; the service arrives with the executor
// issue, and until then no subcommand pretends to exist.
package main

import (
	"os"

	"github.com/sandgate/sandgate/cmd/internal/versioncmd"
)

// version is stamped at build time: -ldflags "-X main.version=…".
var version = "dev"

func main() {
	os.Exit(versioncmd.Run("executor", version,
		"executor will run sandgate's sandbox service and its CLI; for now it only reports its version.",
		os.Args[1:], os.Stdout, os.Stderr))
}
