package agent

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/sandgate/sandgate/core/agentwire"
)

// Relay reaches its sandbox's daemon for one executor stream (the `relay`
// verb): the stream's bytes then flow between the executor and the daemon,
// so the procs the daemon owns outlive this stream.
type Relay struct {
	// Dir holds the daemon's socket (DaemonDir).
	Dir string
	// Start starts a daemon (the agent's `daemon` verb: a session of its
	// own, stdio on /dev/null) and returns its pid, which is not reaped
	// while the relay runs.
	Start func() (int, error)
	// Timeout bounds the wait for a daemon it started. Zero: 5 s.
	Timeout time.Duration
}

// Dial returns a connection to the daemon, which has proven that it holds
// token; a daemon is started when none answers. An error means this stream
// cannot reach one (the caller serves it alone).
func (r Relay) Dial(token string) (*tls.Conn, error) {
	if err := ensureDir(r.Dir); err != nil {
		return nil, err
	}
	pair, err := newTLSPair(token)
	if err != nil {
		return nil, err
	}
	addr := &net.UnixAddr{Name: filepath.Join(r.Dir, daemonSocket), Net: "unix"}
	c, err := net.DialUnix("unix", nil, addr)
	if err == nil {
		return clientHandshake(c, pair.client)
	}
	if !errors.Is(err, syscall.ENOENT) && !errors.Is(err, syscall.ECONNREFUSED) {
		return nil, err
	}
	pid, err := r.Start()
	if err != nil {
		return nil, fmt.Errorf("start the daemon: %w", err)
	}
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialUnix("unix", nil, addr)
		if err == nil {
			// Our daemon takes its token from us, the relay that started it
			// (it checks our pid as we check its); another daemon (one a
			// concurrent relay started) must already know it.
			if p, err := peerPID(c); err == nil && p == pid {
				if _, err := io.WriteString(c, token+"\n"); err != nil {
					_ = c.Close()
					return nil, fmt.Errorf("give the daemon its token: %w", err)
				}
			}
			return clientHandshake(c, pair.client)
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the daemon did not answer within %v: %w", timeout, err)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func clientHandshake(c *net.UnixConn, cfg *tls.Config) (*tls.Conn, error) {
	tc := tls.Client(c, cfg)
	if err := handshake(tc); err != nil {
		_ = c.Close()
		return nil, err
	}
	return tc, nil
}

// ensureDir makes the daemon's directory (0700) or checks the one there.
func ensureDir(dir string) error {
	if err := os.Mkdir(dir, 0o700); err == nil {
		if err := os.Chmod(dir, 0o700); err != nil { // whatever the umask
			return err
		}
	} else if !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("daemon directory: %w", err)
	}
	return checkDir(dir)
}

// ReadToken reads the relay's first line (agentwire.RelayArgv): a
// non-empty hex token and a newline, byte by byte so that nothing after it
// is consumed.
func ReadToken(r io.Reader) (string, error) {
	var line []byte
	b := make([]byte, 1)
	for len(line) < agentwire.MaxTokenLine {
		if _, err := io.ReadFull(r, b); err != nil {
			return "", fmt.Errorf("token line: %w", err)
		}
		if b[0] == '\n' {
			if len(line) == 0 {
				return "", errors.New("token line: empty")
			}
			return string(line), nil
		}
		if !isHex(b[0]) {
			return "", errors.New("token line: not hex")
		}
		line = append(line, b[0])
	}
	return "", errors.New("token line: too long")
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' }
