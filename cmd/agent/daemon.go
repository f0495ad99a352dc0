package main

import (
	"crypto/tls"
	"errors"
	"io"
	"log"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/sandgate/sandgate/app/agent"
)

// The daemon's directory and idle time can be set in the agent's
// environment (the sandbox's, as the engine exec gives it; a command cannot
// change a later relay's): tests give each daemon a directory of its own
// and a short life.
const (
	envDaemonDir  = "SANDGATE_AGENT_DAEMON_DIR"
	envDaemonIdle = "SANDGATE_AGENT_DAEMON_IDLE"
)

func daemonDir() string {
	if d := os.Getenv(envDaemonDir); d != "" {
		return d
	}
	return agent.DaemonDir()
}

// relay reads the token line from the stream, then relays the stream to
// the sandbox's daemon until either side ends. Without a daemon (no
// writable /dev/shm or /tmp, a foreign directory there, a process holding
// the lock or the socket's name) it serves the stream itself: every
// operation still works, the stream's procs end with it, and the reason is
// logged.
func relay(stream io.ReadWriteCloser, logger *log.Logger) error {
	token, err := agent.ReadToken(stream)
	if err != nil {
		_ = stream.Close()
		return err
	}
	conn, err := agent.Relay{Dir: daemonDir(), Start: startDaemon}.Dial(token)
	if err != nil {
		logger.Printf("no daemon, this stream is served alone and its procs end with it: %v", err)
		return serveAlone(stream, logger)
	}
	splice(stream, conn)
	return nil
}

// splice copies both ways until either side ends, then closes both. The
// executor's end of the stream is passed on as TLS's close_notify, and the
// relay reads on until the daemon closes: the daemon then knows the stream
// ended (it kills the stream's commands), where a relay that dies leaves
// them running (app/agent's Daemon.serve), and a close with bytes unread
// would reach it as a reset.
func splice(stream io.ReadWriteCloser, conn *tls.Conn) {
	fromDaemon := make(chan struct{})
	go func() {
		defer close(fromDaemon)
		_, _ = io.Copy(stream, conn)
	}()
	toDaemon := make(chan struct{})
	go func() {
		defer close(toDaemon)
		if _, err := io.Copy(conn, stream); err == nil {
			_ = conn.CloseWrite()
		}
	}()
	select {
	case <-fromDaemon:
	case <-toDaemon:
		select {
		case <-fromDaemon:
		case <-time.After(closeWait):
		}
	}
	_ = conn.Close()
	_ = stream.Close()
}

// closeWait bounds the wait for the daemon to close after the stream ended.
const closeWait = 5 * time.Second

// startDaemon starts `sandgate-agent daemon` in a session of its own (a
// signal to the relay's group does not reach it) with stdio on /dev/null,
// in the relay's directory and environment, which its commands inherit.
// It is not reaped: the relay exits first and the daemon is re-parented.
func startDaemon() (int, error) {
	bin, err := os.Executable()
	if err != nil {
		return 0, err
	}
	cmd := exec.Command(bin, "daemon")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	return cmd.Process.Pid, nil
}

// daemon serves the sandbox's daemon socket until it has been idle for
// agent.DefaultDaemonIdle. Its stdio is /dev/null: its log goes nowhere,
// and every refusal also reaches the relay as a failed handshake.
func daemon(logger *log.Logger) error {
	idle, _ := time.ParseDuration(os.Getenv(envDaemonIdle)) // zero: the default
	d := &agent.Daemon{Dir: daemonDir(), Options: agent.Options{Self: self(logger)}, Logger: logger,
		Bootstrap: os.Getppid(), Idle: idle,
		Serve: func(conn io.ReadWriteCloser, srv *agent.Server, cut func() bool) error {
			return serveConn(conn, srv, logger, cut)
		}}
	if err := d.Run(); err != nil && !errors.Is(err, agent.ErrDaemonRunning) {
		return err
	}
	return nil
}
