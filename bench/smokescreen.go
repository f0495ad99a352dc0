package main

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

// smokescreenVersion is the reference egress proxy gate-http is compared
// with (docs/PERFORMANCE.md), built from the Go module proxy into .bin once.
const smokescreenVersion = "v0.1.0"

type smokescreen struct {
	cmd *exec.Cmd
	url *url.URL
}

// startSmokescreen builds (once) and starts smokescreen on a free loopback
// port, allowed to reach loopback origins, and waits until it listens.
func startSmokescreen(ctx context.Context) (*smokescreen, error) {
	bin, err := smokescreenBinary(ctx)
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "--listen-ip", "127.0.0.1", "--listen-port", strconv.Itoa(port),
		"--allow-address", "127.0.0.1", "--statsd-address", "127.0.0.1:9")
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &smokescreen{cmd: cmd, url: &url.URL{Scheme: "http", Host: "127.0.0.1:" + strconv.Itoa(port)}}
	for deadline := time.Now().Add(20 * time.Second); ; {
		c, err := net.Dial("tcp", s.url.Host)
		if err == nil {
			_ = c.Close()
			return s, nil
		}
		if time.Now().After(deadline) {
			s.close()
			return nil, fmt.Errorf("smokescreen did not listen: %w", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *smokescreen) close() {
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
}

func smokescreenBinary(ctx context.Context) (string, error) {
	dir, err := filepath.Abs(filepath.Join(".bin", "smokescreen-"+smokescreenVersion))
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "smokescreen")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	install := exec.CommandContext(ctx, "go", "install", "github.com/stripe/smokescreen@"+smokescreenVersion)
	install.Env = append(os.Environ(), "GOBIN="+dir, "GOFLAGS=-mod=mod")
	install.Stderr = os.Stderr
	if err := install.Run(); err != nil {
		return "", fmt.Errorf("go install smokescreen@%s: %w", smokescreenVersion, err)
	}
	return bin, nil
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = ln.Close() }()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
