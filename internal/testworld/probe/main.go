// Command probe is test support for the gate's bypass suite
// (adapters/docker/security_integration_test.go). Built static by the test
// and uploaded into a gated sandbox, it attempts one thing per run — a
// direct dial, a DNS query, a proxied request, a raw socket, a setuid — and
// prints what happened, so the test can assert the exact outcome. In server
// mode ("serve") it is the test's origin: HTTP, HTTPS, TCP, UDP and DNS
// echo servers that log every request they see.
//
// Exit codes: 0 the attempt succeeded (connected, answered, response read),
// 1 it failed (the error is printed), 2 usage.
package main

import (
	"errors"
	"fmt"
	"os"
)

// command is one subcommand: it returns whether the attempt succeeded.
type command func(args []string) (bool, error)

var commands = map[string]command{
	"tcp":       runTCP,
	"udp":       runUDP,
	"dns":       runDNS,
	"http":      runHTTP,
	"connect":   runConnect,
	"raw":       runRaw,
	"families":  runFamilies,
	"setuid":    runSetuid,
	"serve":     runServe,
	"stream":    runStream,
	"upgrade":   runUpgrade,
	"slowloris": runSlowloris,
}

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	if len(args) == 0 || commands[args[0]] == nil {
		fmt.Fprintln(os.Stderr, "usage: probe tcp|udp|dns|http|connect|stream|upgrade|slowloris|raw|families|setuid|serve ...")
		return 2
	}
	ok, err := commands[args[0]](args[1:])
	switch {
	case errors.Is(err, errUsage):
		fmt.Fprintln(os.Stderr, err)
		return 2
	case err != nil && !ok:
		fmt.Println("error:", err)
		return 1
	case !ok:
		return 1
	}
	return 0
}

// errUsage marks bad arguments (exit 2).
var errUsage = errors.New("usage")

func usageError(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errUsage}, args...)...)
}
