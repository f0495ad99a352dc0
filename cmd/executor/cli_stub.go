package main

import (
	"fmt"
	"os"

	"github.com/sandgate/sandgate/cmd/internal/versioncmd"
)

// runCLI stands in for the CLI subcommands (create, exec, cp, export, rm,
// ls), which arrive in cli.go; that change deletes this file.
func runCLI(args []string) int {
	_, _ = fmt.Fprintln(os.Stderr, "usage: executor serve [flags] | executor version")
	_ = args
	return versioncmd.ExitUsage
}
