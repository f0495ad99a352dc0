// Package versioncmd is the `version` subcommand and the exit codes both
// sandgate binaries share: `NAME version` (or -version, --version) prints the
// version and anything else prints usage and exits 2. It is not their command
// line: `executor` has its own (serve in cmd/executor, the client commands in
// cmd/executor/internal/cli), and `gate` takes -healthcheck and -firewall.
// `executor` hands it only the version words; the gate hands it whatever it
// does not take itself. It exists so the two mains do not each carry a copy.
package versioncmd

import (
	"fmt"
	"io"
)

// Exit codes of Run.
const (
	// ExitFailure: the answer could not be written (a closed pipe, say).
	ExitFailure = 1
	// ExitUsage: a command line the binary does not accept.
	ExitUsage = 2
)

// Run handles args (without the program name) for the binary called name and
// returns the process exit code: 0 once the version is printed, ExitUsage for
// anything else, ExitFailure if stdout refuses the answer. about says in one
// line what the binary will be, for the usage text.
func Run(name, version, about string, args []string, stdout, stderr io.Writer) int {
	if len(args) == 1 {
		switch args[0] {
		case "version", "-version", "--version":
			if _, err := fmt.Fprintln(stdout, name, version); err != nil {
				return ExitFailure
			}
			return 0
		}
	}
	// A usage error stays a usage error even if stderr is gone.
	_, _ = fmt.Fprintf(stderr, "usage: %s version\n\n%s\n", name, about)
	return ExitUsage
}
