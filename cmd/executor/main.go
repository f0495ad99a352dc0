// Command executor is sandgate's service and its CLI: `executor serve`
// exposes the sandbox API over HTTP to an orchestrator, hosts the gates'
// config endpoint and serves probes and metrics; the other subcommands drive
// that service by hand (create, exec, cp, export, rm, ls). It is the only
// place that wires modules with fx.
package main

import (
	"os"

	"github.com/sandgate/sandgate/cmd/internal/versioncmd"
)

// version is stamped at build time: -ldflags "-X main.version=…".
var version = "dev"

func main() {
	os.Exit(dispatch(os.Args[1:]))
}

// dispatch sends `serve` to runServe (serve*.go), `version` to versioncmd and
// everything else to runCLI (cli*.go), and returns the exit code.
func dispatch(args []string) int {
	if len(args) > 0 {
		switch args[0] {
		case "serve":
			return runServe(args[1:])
		case "version", "-version", "--version":
			return versioncmd.Run("executor", version, "", args[:1], os.Stdout, os.Stderr)
		}
	}
	return runCLI(args)
}
