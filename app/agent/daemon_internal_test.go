package agent

import (
	"context"
	"crypto/tls"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/yamux"
	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/agentwire"
)

// runDaemon runs a daemon in dir until it exits when idle; the test's end
// waits for that.
func runDaemon(t *testing.T, dir string, bootstrap int) {
	t.Helper()
	d := &Daemon{Dir: dir, Logger: log.New(io.Discard, "", 0), Bootstrap: bootstrap, Idle: 200 * time.Millisecond,
		Serve: serveYamux}
	done := make(chan error, 1)
	go func() { done <- d.Run() }()
	t.Cleanup(func() {
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Error("the daemon did not exit when idle")
		}
	})
	require.Eventually(t, func() bool {
		_, err := os.Stat(filepath.Join(dir, daemonSocket))
		return err == nil
	}, 5*time.Second, 5*time.Millisecond)
}

// privateDir is a daemon directory: the user's own, 0700.
func privateDir(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), "d")
	require.NoError(t, os.Mkdir(dir, 0o700))
	return dir
}

// serveYamux serves srv over conn as cmd/agent does: a yamux server
// session under net/http, until conn ends.
func serveYamux(conn io.ReadWriteCloser, srv *Server, cut func() bool) error {
	sess, err := yamux.Server(conn, nil)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: srv, BaseContext: func(net.Listener) context.Context { return CutContext(cut) }}
	go func() { _ = hs.Serve(sess) }()
	<-sess.CloseChan()
	return hs.Close()
}

func dialDaemon(t *testing.T, dir string) *net.UnixConn {
	t.Helper()
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: filepath.Join(dir, daemonSocket), Net: "unix"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// askVersion asks the agent behind an authenticated connection for its version.
func askVersion(t *testing.T, c net.Conn) string {
	t.Helper()
	sess, err := yamux.Client(c, nil)
	require.NoError(t, err)
	defer func() { _ = sess.Close() }()
	hc := &http.Client{Transport: &http.Transport{DialContext: func(context.Context, string, string) (net.Conn, error) {
		return sess.Open()
	}}}
	resp, err := hc.Get("http://agent" + agentwire.PathVersion)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	hc.CloseIdleConnections()
	return string(b)
}

// TestDaemonTakesItsTokenFromItsStarterOnly: a process that is not the
// relay that started the daemon cannot set its token, even by connecting
// first; the starter can; afterwards only a peer that proves the token
// gets a session, and a second daemon in the directory steps aside.
func TestDaemonTakesItsTokenFromItsStarterOnly(t *testing.T) {
	t.Parallel()
	dir := privateDir(t)
	token := agentwire.Token([]byte("key"), "sandbox")
	runDaemon(t, dir, os.Getpid())

	second := &Daemon{Dir: dir, Logger: log.New(io.Discard, "", 0), Bootstrap: os.Getpid()}
	require.ErrorIs(t, second.Run(), ErrDaemonRunning)

	pair, err := newTLSPair(token)
	require.NoError(t, err)
	c := dialDaemon(t, dir)
	_, err = io.WriteString(c, token+"\n")
	require.NoError(t, err)
	tc := tls.Client(c, pair.client)
	require.NoError(t, handshake(tc))
	require.Equal(t, agentwire.Version, askVersion(t, tc))

	// A wrong identity is refused by both sides' pin.
	other, err := newTLSPair(agentwire.Token([]byte("key"), "another sandbox"))
	require.NoError(t, err)
	require.ErrorContains(t, handshake(tls.Client(dialDaemon(t, dir), other.client)), "daemon handshake")
	// The right one, with no token line now, works again.
	again := tls.Client(dialDaemon(t, dir), pair.client)
	require.NoError(t, handshake(again))
	require.Equal(t, agentwire.Version, askVersion(t, again))
}

func TestDaemonRefusesATokenFromAnotherProcess(t *testing.T) {
	t.Parallel()
	dir := privateDir(t)
	token := agentwire.Token([]byte("key"), "sandbox")
	runDaemon(t, dir, os.Getpid()+1_000_000) // not this process
	c := dialDaemon(t, dir)
	// The daemon may have closed already (it checks the pid first): the
	// write can fail, the read must.
	_, _ = io.WriteString(c, token+"\n")
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := c.Read(make([]byte, 1))
	require.Error(t, err)
	require.False(t, os.IsTimeout(err), "the daemon closes a connection that is not its starter's (EOF or a reset)")
}

// TestRelayRefusesAnImpostor: a process that took the socket's name and
// answers TLS without the token is not a daemon to the relay.
func TestRelayRefusesAnImpostor(t *testing.T) {
	t.Parallel()
	dir := privateDir(t)
	ln, err := net.Listen("unix", filepath.Join(dir, daemonSocket))
	require.NoError(t, err)
	defer func() { _ = ln.Close() }()
	impostor, err := newTLSPair(agentwire.Token([]byte("guess"), "sandbox"))
	require.NoError(t, err)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		_ = tls.Server(c, impostor.server).Handshake()
		_ = c.Close()
	}()
	r := Relay{Dir: dir, Start: func() (int, error) { t.Error("a daemon answered: nothing to start"); return 0, nil }}
	_, err = r.Dial(agentwire.Token([]byte("key"), "sandbox"))
	require.ErrorContains(t, err, "daemon handshake")
}
