package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/sandgate/sandgate/cmd/executor/internal/cli"
)

// runCLI runs the client subcommands (create, exec, cp, export, rm, ls)
// against a running `executor serve` and returns the exit code. Ctrl-C or
// SIGTERM cancels the call in flight.
func runCLI(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	st := cli.OSStreams()
	st.Version = version
	return cli.Run(ctx, args, st)
}
