package agent

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// DaemonDir is the directory of the daemon's socket and lock for the
// agent's user: in /dev/shm (a tmpfs in every container, writable under a
// read-only root, and outside what a user exports) or, without one, /tmp;
// the agent's own directory is read-only. It is 0700 and the user's own,
// which every relay and daemon checks; the sandbox's processes run as that
// user too, so what keeps them out is the token (daemonauth.go), not the
// mode.
func DaemonDir() string {
	base := "/tmp"
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		base = "/dev/shm"
	}
	return fmt.Sprintf("%s/.sandgate-agent-%d", base, os.Geteuid())
}

const (
	daemonSocket = "daemon.sock"
	daemonLock   = "daemon.lock"
	// DefaultDaemonIdle is how long a daemon with no stream and no running
	// proc lives on: an executor that comes back within it finds the
	// output of the procs that ended.
	DefaultDaemonIdle = 10 * time.Minute
	// handshakeTimeout bounds a connection's first line and TLS handshake.
	handshakeTimeout = 5 * time.Second
)

// ErrDaemonRunning: another daemon holds the directory's lock.
var ErrDaemonRunning = errors.New("another daemon is running")

// Daemon owns one sandbox's procs past every stream: each connection to
// its socket (a relay's, one per executor stream) gets a Server of its own
// over a yamux session, as `serve` gives its stdio, all sharing the
// daemon's Procs; a connection's end kills its execs, never the procs.
type Daemon struct {
	// Dir holds the socket and the lock (DaemonDir).
	Dir string
	// Options configure each connection's Server; Procs is the daemon's.
	Options Options
	// Serve serves srv on a connection until it ends (cmd/agent: yamux and
	// net/http), its requests' contexts from CutContext(cut).
	Serve  func(conn io.ReadWriteCloser, srv *Server, cut func() bool) error
	Logger *log.Logger
	// Bootstrap is the pid of the relay that started the daemon: the one
	// peer whose first line sets the token, once.
	Bootstrap int
	// Idle: the daemon exits after this long with no connection and no
	// running proc. Zero means DefaultDaemonIdle.
	Idle time.Duration

	admitMu sync.Mutex
	pair    *tlsPair

	mu    sync.Mutex
	conns int
}

// Run takes the lock, listens and serves until the daemon has been idle
// for Idle. It returns ErrDaemonRunning when another daemon has the lock.
func (d *Daemon) Run() error {
	if err := checkDir(d.Dir); err != nil {
		return err
	}
	lock, err := os.OpenFile(filepath.Join(d.Dir, daemonLock), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer func() { _ = lock.Close() }()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		if errors.Is(err, unix.EWOULDBLOCK) {
			return ErrDaemonRunning
		}
		return fmt.Errorf("lock: %w", err)
	}
	sock := filepath.Join(d.Dir, daemonSocket)
	_ = os.Remove(sock) // a dead daemon's
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		return err
	}
	if d.Options.Procs == nil {
		d.Options.Procs = NewProcs()
	}
	stop := make(chan struct{})
	defer close(stop)
	go d.exitWhenIdle(ln, stop)
	for {
		c, err := ln.AcceptUnix()
		if errors.Is(err, net.ErrClosed) {
			return nil
		}
		if err != nil {
			d.Logger.Printf("accept: %v", err)
			time.Sleep(10 * time.Millisecond) // out of descriptors: let some close
			continue
		}
		d.track(1)
		go func() {
			defer d.track(-1)
			d.serve(c)
		}()
	}
}

func (d *Daemon) track(n int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.conns += n
}

// exitWhenIdle closes ln once the daemon has had no connection and no
// running proc for Idle.
func (d *Daemon) exitWhenIdle(ln net.Listener, stop <-chan struct{}) {
	idle := d.Idle
	if idle <= 0 {
		idle = DefaultDaemonIdle
	}
	tick := time.NewTicker(min(idle/4, 30*time.Second))
	defer tick.Stop()
	var quiet time.Time
	for {
		select {
		case <-stop:
			return
		case now := <-tick.C:
			d.mu.Lock()
			busy := d.conns > 0
			d.mu.Unlock()
			switch {
			case busy || d.Options.Procs.Running() > 0:
				quiet = time.Time{}
			case quiet.IsZero():
				quiet = now
			case now.Sub(quiet) >= idle:
				_ = ln.Close()
				return
			}
		}
	}
}

// serve admits one connection and serves it until it ends. Its commands
// are killed then, as `serve` kills its own when its stdin ends, when the
// relay ended it (the executor's stream ended: the relay closes TLS with
// close_notify). A relay that died (a command killed it) leaves them to
// their end or their deadline, as a killed `serve` agent did (exec.go's
// forward), for the executor, which follows a command whose agent vanished
// from outside.
func (d *Daemon) serve(c *net.UnixConn) {
	pair, err := d.admit(c)
	if err != nil {
		d.Logger.Printf("connection refused: %v", err)
		_ = c.Close()
		return
	}
	raw := &eofWatch{UnixConn: c}
	tc := tls.Server(raw, pair.server)
	if err := handshake(tc); err != nil {
		d.Logger.Printf("connection refused: %v", err)
		_ = c.Close()
		return
	}
	srv := New(d.Options)
	if err := d.Serve(tc, srv, raw.cut.Load); err != nil {
		d.Logger.Print(err)
	}
	if !raw.cut.Load() {
		srv.KillAll()
	}
	_ = tc.Close()
}

// eofWatch records an end of the socket that TLS had not announced: after a
// close_notify, TLS reads nothing more, so a raw read's error means the
// relay died.
type eofWatch struct {
	*net.UnixConn
	cut atomic.Bool
}

func (w *eofWatch) Read(p []byte) (int, error) {
	n, err := w.UnixConn.Read(p)
	if err != nil { // EOF, or a reset when the relay left bytes unread
		w.cut.Store(true)
	}
	return n, err
}

// admit returns the daemon's TLS identity. The first connection sets it
// from its first line (the token), and only the relay that started the
// daemon may send it: the peer's pid (SO_PEERCRED) must be Bootstrap.
func (d *Daemon) admit(c *net.UnixConn) (*tlsPair, error) {
	d.admitMu.Lock()
	defer d.admitMu.Unlock()
	if d.pair != nil {
		return d.pair, nil
	}
	pid, err := peerPID(c)
	if err != nil {
		return nil, err
	}
	if pid != d.Bootstrap {
		return nil, fmt.Errorf("pid %d is not the relay that started the daemon (%d), which must send the token first", pid, d.Bootstrap)
	}
	_ = c.SetReadDeadline(time.Now().Add(handshakeTimeout))
	token, err := ReadToken(c)
	_ = c.SetReadDeadline(time.Time{})
	if err != nil {
		return nil, err
	}
	pair, err := newTLSPair(token)
	if err != nil {
		return nil, err
	}
	d.pair = &pair
	return d.pair, nil
}

// handshake runs a TLS handshake within handshakeTimeout.
func handshake(c *tls.Conn) error {
	_ = c.SetDeadline(time.Now().Add(handshakeTimeout))
	if err := c.Handshake(); err != nil {
		return fmt.Errorf("daemon handshake: %w", err)
	}
	return c.SetDeadline(time.Time{})
}

// peerPID is the pid of the process at the other end of c, as the kernel
// recorded it when the connection was made.
func peerPID(c *net.UnixConn) (int, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0, err
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return 0, err
	}
	if credErr != nil {
		return 0, fmt.Errorf("SO_PEERCRED: %w", credErr)
	}
	return int(cred.Pid), nil
}

// checkDir refuses a daemon directory that is not a real directory of the
// agent's user with mode 0700.
func checkDir(dir string) error {
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return fmt.Errorf("daemon directory: %w", err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR || int(st.Uid) != os.Geteuid() || st.Mode&0o777 != 0o700 {
		return fmt.Errorf("daemon directory %s is not a 0700 directory of uid %d", dir, os.Geteuid())
	}
	return nil
}
