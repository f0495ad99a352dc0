// Command sandgate-agent is the in-sandbox agent: `sandgate-agent serve`
// serves core/agentwire's routes (app/agent) over its stdin and stdout,
// multiplexed by yamux (it is the yamux server), until stdin ends. A
// provider starts it with one engine exec per sandbox (agentwire.Argv), so
// nothing listens on the sandbox's network.
package main

import (
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/hashicorp/yamux"
	"golang.org/x/sys/unix"

	"github.com/sandgate/sandgate/app/agent"
)

// streamWindow is each yamux stream's receive window: large enough that a
// write of many MiB is not held to one 256 KiB window per round trip.
const streamWindow = 4 << 20

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
	case len(args) != 1 || args[0] != "serve":
		logger.Print("usage: sandgate-agent serve | install DIR")
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
	// SIGPIPE death that would skip the kill below. Notify, not Ignore: an
	// ignored signal would stay ignored in every command the agent runs.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	if err := serve(stdio{stdin, stdout}, logger); err != nil {
		logger.Print(err)
		return 1
	}
	return 0
}

// serve serves the agent's routes on a yamux session over conn until conn
// ends, then kills every command still running.
func serve(conn io.ReadWriteCloser, logger *log.Logger) error {
	cfg := yamux.DefaultConfig()
	cfg.MaxStreamWindowSize = streamWindow
	cfg.LogOutput = logger.Writer()
	sess, err := yamux.Server(conn, cfg)
	if err != nil {
		return fmt.Errorf("yamux: %w", err)
	}
	// Each command starts as this binary, held until its pid is reported
	// (agent.GatedVerb); without our own path, commands start directly.
	self, err := os.Executable()
	if err != nil {
		logger.Printf("no gated start: %v", err)
	}
	srv := agent.New(agent.Options{Self: self})
	hs := &http.Server{Handler: srv, ErrorLog: logger}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(sess) }()
	<-sess.CloseChan()
	srv.KillAll()
	_ = hs.Close()
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) && !sess.IsClosed() {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

// stdio is the agent's stdin and stdout as one connection.
type stdio struct {
	io.ReadCloser
	w io.WriteCloser
}

func (s stdio) Write(p []byte) (int, error) { return s.w.Write(p) }

func (s stdio) Close() error { return errors.Join(s.ReadCloser.Close(), s.w.Close()) }
