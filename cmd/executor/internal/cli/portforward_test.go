package cli

import (
	"bufio"
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/sandbox"
)

// upper serves one connection inside the fake sandbox: each line back
// upper-cased.
func upper(c net.Conn) {
	defer func() { _ = c.Close() }()
	sc := bufio.NewScanner(c)
	for sc.Scan() {
		if _, err := io.WriteString(c, strings.ToUpper(sc.Text())+"\n"); err != nil {
			return
		}
	}
}

func TestPortForwardCarriesConnectionsUntilCancelled(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.svc.Dial = func(int) (net.Conn, error) {
		a, b := net.Pipe()
		go upper(b)
		return a, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, outW := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, []string{"port-forward", "ses_a", "0:8080"}, Streams{
			Stdout: outW, Stderr: io.Discard, Getenv: func(k string) string { return h.env[k] },
		})
		_ = outW.Close()
	}()
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	go func() { _, _ = io.Copy(io.Discard, out) }()
	addr := strings.Fields(line)[1]
	require.True(t, strings.HasPrefix(addr, "127.0.0.1:"), line)

	var conns []net.Conn
	for _, word := range []string{"one", "two"} {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		conns = append(conns, c)
		_, err = io.WriteString(c, word+"\n")
		require.NoError(t, err)
		got, err := bufio.NewReader(c).ReadString('\n')
		require.NoError(t, err)
		require.Equal(t, strings.ToUpper(word)+"\n", got)
	}
	cancel()
	select {
	case code := <-done:
		require.Equal(t, ExitOK, code, "Ctrl-C is how a port-forward ends")
	case <-time.After(5 * time.Second):
		t.Fatal("port-forward did not stop on cancel")
	}
	for _, c := range conns {
		require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
		_, err := c.Read(make([]byte, 1))
		require.ErrorIs(t, err, io.EOF, "every connection is closed at the end")
		require.NoError(t, c.Close())
	}
	require.Contains(t, h.svc.Calls(), "dial ses_a 8080")
}

func TestPortForwardUsage(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	for _, args := range [][]string{
		{"port-forward", "ses_a"}, {"port-forward", "ses_a", "x"}, {"port-forward", "ses_a", "0"},
		{"port-forward", "ses_a", "70000:80"}, {"port-forward", "bad id", "80"},
	} {
		r := h.run(args...)
		require.Equal(t, ExitUsage, r.code, "%v: %s", args, r.stderr)
	}
	h.svc.Err = sandbox.ErrNotFound
	r := h.run("port-forward", "ses_a", "8080")
	require.Equal(t, ExitFailure, r.code, r.stderr)
	require.Contains(t, r.stderr, "session ses_a not found", "a session not running fails before listening")
}
