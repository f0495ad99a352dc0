package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"

	"github.com/hashicorp/yamux"

	"github.com/sandgate/sandgate/app/agent"
)

// streamWindow is each yamux stream's receive window: large enough that a
// write of many MiB is not held to one 256 KiB window per round trip.
const streamWindow = 4 << 20

// serveAlone serves a stream with a Server of its own until the stream
// ends, then kills everything it still runs, procs included.
func serveAlone(conn io.ReadWriteCloser, logger *log.Logger) error {
	srv := agent.New(agent.Options{Self: self(logger)})
	err := serveConn(conn, srv, logger, nil)
	srv.KillAll()
	return err
}

// serveConn serves srv's routes on a yamux session (the agent is its
// server) over conn until conn ends. cut, when set, tells srv's handlers
// whether conn was cut off (agent.CutContext).
func serveConn(conn io.ReadWriteCloser, srv *agent.Server, logger *log.Logger, cut func() bool) error {
	cfg := yamux.DefaultConfig()
	cfg.MaxStreamWindowSize = streamWindow
	cfg.LogOutput = logger.Writer()
	sess, err := yamux.Server(conn, cfg)
	if err != nil {
		return fmt.Errorf("yamux: %w", err)
	}
	hs := &http.Server{Handler: srv, ErrorLog: logger}
	if cut != nil {
		hs.BaseContext = func(net.Listener) context.Context { return agent.CutContext(cut) }
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(sess) }()
	<-sess.CloseChan()
	_ = hs.Close()
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) && !sess.IsClosed() {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}
