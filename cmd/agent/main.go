// Command sandgate-agent is the in-sandbox agent. A provider starts it with
// one engine exec per sandbox and speaks core/agentwire's routes (app/agent)
// to it over that exec's stdin and stdout, multiplexed by yamux (the agent
// is the yamux server), so nothing listens on the sandbox's network:
//
//   - `relay` (agentwire.RelayArgv) reads the sandbox's token as its first
//     line, then relays the stream to the sandbox's `daemon`, starting it
//     when none answers. The daemon owns the procs, so they outlive the
//     stream (an executor restart). A stream that cannot reach a daemon is
//     served by the relay itself, as `serve` would.
//   - `serve` (agentwire.Argv) serves the stream itself until stdin ends,
//     then kills everything it started, procs included.
package main

import (
	"errors"
	"io"
	"log"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/sandgate/sandgate/app/agent"
)

func main() { os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }

// run is the agent's life; it returns the exit code.
func run(args []string, stdin io.ReadCloser, stdout io.WriteCloser, stderr io.Writer) int {
	logger := log.New(stderr, "sandgate-agent: ", 0)
	switch {
	case len(args) == 2 && args[0] == agent.GatedVerb:
		return agent.RunGated(args[1], logger)
	case len(args) == 2 && args[0] == "install":
		if err := install(args[1]); err != nil {
			logger.Print(err)
			return 1
		}
		return 0
	case len(args) != 1:
		logger.Print(usage)
		return 2
	}
	// Non-dumpable before anything else: the sandbox's processes run as the
	// agent's user, and this closes its /proc entries (mem, fd, environ)
	// and ptrace to them, so a command cannot forge what the agent reports.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		logger.Printf("prctl(PR_SET_DUMPABLE): %v", err)
		return 1
	}
	// A write to a stdout whose reader is gone must be an error, not a
	// SIGPIPE death that would skip the kill in serveAlone. Notify, not
	// Ignore: an ignored signal would stay ignored in every command the
	// agent runs.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	var err error
	switch args[0] {
	case "serve":
		err = serveAlone(stdio{stdin, stdout}, logger)
	case "relay":
		err = relay(stdio{stdin, stdout}, logger)
	case "daemon":
		err = daemon(logger)
	default:
		logger.Print(usage)
		return 2
	}
	if err != nil {
		logger.Print(err)
		return 1
	}
	return 0
}

const usage = "usage: sandgate-agent relay | serve | daemon | install DIR"

// self is the agent's own binary: each command starts as it, held until
// its pid is reported (agent.GatedVerb); without it, commands start
// directly.
func self(logger *log.Logger) string {
	p, err := os.Executable()
	if err != nil {
		logger.Printf("no gated start: %v", err)
	}
	return p
}

// stdio is the agent's stdin and stdout as one connection.
type stdio struct {
	io.ReadCloser
	w io.WriteCloser
}

func (s stdio) Write(p []byte) (int, error) { return s.w.Write(p) }

func (s stdio) Close() error { return errors.Join(s.ReadCloser.Close(), s.w.Close()) }
