// Command executor is sandgate's service and its CLI: `executor serve`
// exposes the sandbox API over HTTP to an orchestrator, hosts the gates'
// config endpoint and serves probes and metrics; the other subcommands drive
// that service by hand (create, exec, cp, export, rm, ls). It is the only
// place that wires modules with fx.
package main

import (
	"fmt"
	"os"

	"github.com/sandgate/sandgate/cmd/internal/versioncmd"
	"github.com/sandgate/sandgate/internal/seccomp"
)

// version is stamped at build time: -ldflags "-X main.version=…".
var version = "dev"

func main() {
	os.Exit(dispatch(os.Args[1:]))
}

// dispatch sends `serve` to runServe (serve*.go), `version` to versioncmd,
// `seccomp-profile` to printing the sandboxes' seccomp profile (the file a
// Kubernetes node needs for SANDGATE_K8S_SECCOMP_PROFILE) and everything
// else to runCLI (cli*.go), and returns the exit code.
func dispatch(args []string) int {
	if len(args) > 0 {
		switch args[0] {
		case "serve":
			return runServe(args[1:])
		case "version", "-version", "--version":
			return versioncmd.Run("executor", version, "", args[:1], os.Stdout, os.Stderr)
		case "seccomp-profile":
			if len(args) > 1 {
				_, _ = fmt.Fprintln(os.Stderr, "usage: executor seccomp-profile > FILE")
				return 2
			}
			_, _ = fmt.Fprintln(os.Stdout, seccomp.Profile())
			return 0
		}
	}
	return runCLI(args)
}
