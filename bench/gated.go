package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"

	"github.com/sandgate/sandgate/adapters/docker"
	"github.com/sandgate/sandgate/adapters/httpapi"
	"github.com/sandgate/sandgate/adapters/sessionstore"
	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/core/session"
)

// gateImage is the gate `make gate-image` builds from this tree.
var gateImage = envOr("SANDGATE_BENCH_GATE_IMAGE", "sandgate/gate:dev")

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// controlPlane is a gate-config endpoint on the default bridge's gateway,
// where the gates (on that bridge) reach it, over a throwaway SQLite store.
type controlPlane struct {
	store *sessionstore.Store
	srv   *http.Server
	url   string
	dir   string
}

func startControlPlane(ctx context.Context, e *env) (*controlPlane, error) {
	nw, err := e.cli.NetworkInspect(ctx, "bridge", network.InspectOptions{})
	if err != nil {
		return nil, fmt.Errorf("the bridge network's gateway: %w", err)
	}
	if len(nw.IPAM.Config) == 0 {
		return nil, fmt.Errorf("the bridge network has no IPAM config")
	}
	dir, err := os.MkdirTemp("", "sandgate-bench-cp-")
	if err != nil {
		return nil, err
	}
	key := make([]byte, session.KeyLen)
	_, _ = rand.Read(key)
	store, err := sessionstore.OpenSQLite(ctx, filepath.Join(dir, "cp.db"), key)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(nw.IPAM.Config[0].Gateway, "0"))
	if err != nil {
		_ = store.Close()
		_ = os.RemoveAll(dir)
		return nil, err
	}
	cp := &controlPlane{store: store, dir: dir, url: "http://" + ln.Addr().String(),
		srv: &http.Server{Handler: httpapi.NewGateConfigHandler(store, store, slog.New(slog.NewTextHandler(io.Discard, nil))),
			ReadHeaderTimeout: 5 * time.Second}}
	go func() { _ = cp.srv.Serve(ln) }()
	return cp, nil
}

func (cp *controlPlane) close() {
	_ = cp.srv.Close()
	_ = cp.store.Close()
	_ = os.RemoveAll(cp.dir)
}

// startOrigin runs busybox's httpd on the default bridge and returns its
// address: the one host the gated sessions may reach.
func startOrigin(ctx context.Context, e *env) (string, error) {
	c, err := e.cli.ContainerCreate(ctx, &container.Config{Image: "busybox:1.35", Labels: map[string]string{benchLabel: "1"},
		Cmd: []string{"sh", "-c", "mkdir -p /www && echo origin-ok >/www/index.html && exec httpd -f -p 8080 -h /www"}},
		&container.HostConfig{}, nil, nil, "")
	if err != nil {
		return "", err
	}
	if err := e.cli.ContainerStart(ctx, c.ID, container.StartOptions{}); err != nil {
		return "", err
	}
	ins, err := e.cli.ContainerInspect(ctx, c.ID)
	if err != nil {
		return "", err
	}
	ep, ok := ins.NetworkSettings.Networks["bridge"]
	if !ok {
		return "", fmt.Errorf("the origin is not on the bridge network")
	}
	return net.JoinHostPort(ep.IPAddress, "8080"), nil
}

// provisionGatedRow reports (no baseline: a raw engine has no gate) a gated
// Provision until the first request through the gate is admitted, with its
// two parts: Provision (gate created, firewall verified, first config,
// sandbox created with the CA) and the first request.
func provisionGatedRow(ctx context.Context, e *env) (Row, error) {
	cp, err := startControlPlane(ctx, e)
	if err != nil {
		return Row{}, err
	}
	defer cp.close()
	origin, err := startOrigin(ctx, e)
	if err != nil {
		return Row{}, err
	}
	// The gated provider mints the gate tokens into the control plane's
	// store (a Spec carries no port).
	p := docker.New(e.cli, docker.Options{Labels: map[string]string{benchLabel: "1"}, Tokens: cp.store})
	get := fmt.Sprintf(`exec 3<>/dev/tcp/127.0.0.1/15080 && printf 'GET http://%[1]s/ HTTP/1.1\r\nHost: %[1]s\r\nConnection: close\r\n\r\n' >&3 && cat <&3`, origin)
	var total, prov, first []time.Duration
	for range e.iterations(5, 2) {
		sid := domain.NewID("ses")
		if err := cp.store.PutSession(ctx, session.Session{ID: sid,
			Networking: domain.Networking{Type: domain.NetLimited, AllowedHosts: []string{origin}}}); err != nil {
			return Row{}, err
		}
		spec := sandbox.Spec{SessionID: sid, Image: e.image,
			Gate: &sandbox.GateSpec{Image: gateImage, ControlplaneURL: cp.url}}
		t0 := time.Now()
		sb, err := p.Provision(ctx, spec)
		if err != nil {
			return Row{}, err
		}
		t1 := time.Now()
		res, err := sb.Exec(ctx, sandbox.ExecRequest{Command: get, Timeout: 30 * time.Second})
		t2 := time.Now()
		_ = p.Reap(context.WithoutCancel(ctx), sid)
		if err != nil {
			return Row{}, err
		}
		if !strings.Contains(res.Stdout, "origin-ok") {
			return Row{}, fmt.Errorf("first request through the gate: exit %d, %q %q", res.ExitCode, res.Stdout, res.Stderr)
		}
		total, prov, first = append(total, t2.Sub(t0)), append(prov, t1.Sub(t0)), append(first, t2.Sub(t1))
	}
	return Row{Ours: median(total).Round(time.Millisecond).String(), Baseline: "-",
		Note: fmt.Sprintf("provision %s + first request %s", median(prov).Round(time.Millisecond), median(first).Round(time.Millisecond))}, nil
}
