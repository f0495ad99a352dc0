// Command executor will be sandgate's service and its CLI: `executor serve`
// will expose the sandbox API over HTTP to an orchestrator, host the gate's
// config endpoint and reap idle sandboxes, and the other subcommands will
// drive that service by hand (create, exec, cp, export, rm, ls). It is the
// only place that will wire modules with fx.
//
// Today it reports its version and runs the client subcommands (runCLI);
// `serve` arrives with the rest of the executor issue.
package main

import (
	"os"

	"github.com/sandgate/sandgate/cmd/internal/versioncmd"
)

// version is stamped at build time: -ldflags "-X main.version=…".
var version = "dev"

func main() {
	args := os.Args[1:]
	if len(args) > 0 {
		switch args[0] {
		case "version", "-version", "--version":
			os.Exit(versioncmd.Run("executor", version, "executor runs sandgate's sandbox service and its CLI.",
				args, os.Stdout, os.Stderr))
		}
	}
	os.Exit(runCLI(args))
}
