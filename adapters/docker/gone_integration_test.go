//go:build integration

package docker_test

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/adapters/docker"
	"github.com/sandgate/sandgate/adapters/docker/dockertest"
	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/ports"
)

// goneWithin bounds how long a call may take to answer once its sandbox
// went away (issue 11: writes blocked about two minutes).
const goneWithin = 5 * time.Second

// goneImage is made locally by build/images.sh.
const goneImage = "debian:bookworm"

// goneWorld is a provider and engine client for the tests of a sandbox
// that goes away under a call.
type goneWorld struct {
	cli *client.Client
	p   *docker.Provider
}

func newGoneWorld(t *testing.T) goneWorld {
	t.Helper()
	cli := dockertest.Client(t)
	dockertest.RequireImage(t, cli, goneImage)
	// On the test's client, which its cleanup closes: a provider of its
	// own client would leave that client's idle connections behind.
	p := docker.New(cli, docker.Options{Labels: dockertest.Labels(t, cli)})
	return goneWorld{cli: cli, p: p}
}

// sandbox provisions a fresh sandbox, reaped when the test ends.
func (w goneWorld) sandbox(t *testing.T) (ports.Sandbox, string) {
	t.Helper()
	sid := domain.NewID("ses")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		require.NoError(t, w.p.Reap(ctx, sid))
	})
	sb, err := w.p.Provision(t.Context(), sandbox.Spec{SessionID: sid, Image: goneImage})
	require.NoError(t, err)
	return sb, docker.ContainerName(sid.String())
}

// takeAway makes the container go away the way mode names: removed (a
// session's DELETE), stopped, or killed.
func (w goneWorld) takeAway(t *testing.T, name, mode string) {
	t.Helper()
	ctx := context.WithoutCancel(t.Context())
	var err error
	switch mode {
	case "remove":
		err = w.cli.ContainerRemove(ctx, name, container.RemoveOptions{Force: true})
	case "stop":
		// The engine's default grace (10 s): the sandbox's init (docker-init)
		// passes the SIGTERM on to the keep-alive, so the sandbox ends at
		// once, and its calls answer within goneWithin, not after the grace.
		err = w.cli.ContainerStop(ctx, name, container.StopOptions{})
	case "kill":
		err = w.cli.ContainerKill(ctx, name, "KILL")
	}
	require.NoError(t, err, mode)
}

// slowSource streams n chunks of 64 KiB, one every 20 ms, as an upload from
// a client does; it stops early when the reader is closed.
func slowSource(t *testing.T, n int) (io.Reader, int64) {
	pr, pw := io.Pipe()
	go func() {
		chunk := bytes.Repeat([]byte("x"), 64<<10)
		for range n {
			if _, err := pw.Write(chunk); err != nil {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		_ = pw.Close()
	}()
	t.Cleanup(func() { _ = pr.Close() })
	return pr, int64(n) << 16
}

// TestSandboxGoneMidCall: a call whose sandbox is removed, stopped or killed
// while it runs answers ErrNotFound promptly — never a result (an exec
// killed with its sandbox is not a command that exited 137) and never a
// hang (issue 11, items 1 and 2; C-EXEC-5).
func TestSandboxGoneMidCall(t *testing.T) {
	w := newGoneWorld(t)
	calls := map[string]func(ctx context.Context, sb ports.Sandbox) error{
		"exec": func(ctx context.Context, sb ports.Sandbox) error {
			res, err := sb.Exec(ctx, sandbox.ExecRequest{Command: "sleep 30"})
			require.Zero(t, res, "no result from a sandbox that went away")
			return err
		},
		"exec-timeout": func(ctx context.Context, sb ports.Sandbox) error {
			res, err := sb.Exec(ctx, sandbox.ExecRequest{Command: "sleep 30", Timeout: 20 * time.Second})
			require.Zero(t, res, "no result from a sandbox that went away")
			return err
		},
		"write": func(ctx context.Context, sb ports.Sandbox) error {
			src, size := slowSource(t, 60) // 3.75 MiB over 1.2 s: the exec's stdin path
			return sb.WriteFileStream(ctx, "/workspace/big", src, size)
		},
	}
	for _, mode := range []string{"remove", "stop", "kill"} {
		for name, call := range calls {
			t.Run(mode+"/"+name, func(t *testing.T) {
				sb, ctrName := w.sandbox(t)
				ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
				defer cancel()
				time.AfterFunc(300*time.Millisecond, func() { w.takeAway(t, ctrName, mode) })
				start := time.Now()
				err := call(ctx, sb)
				took := time.Since(start)
				require.ErrorIs(t, err, sandbox.ErrNotFound, "a call whose sandbox went away")
				require.Less(t, took, goneWithin+300*time.Millisecond, "it must answer promptly")
			})
		}
	}
}

// TestSandboxGoneRace: short calls in a loop race a removal; each answers
// its result or ErrNotFound, never another error, and an exec of `true`
// never answers a plausible 137.
func TestSandboxGoneRace(t *testing.T) {
	w := newGoneWorld(t)
	big := bytes.Repeat([]byte("y"), 1<<20)
	calls := map[string]func(ctx context.Context, sb ports.Sandbox) error{
		"exec": func(ctx context.Context, sb ports.Sandbox) error {
			res, err := sb.Exec(ctx, sandbox.ExecRequest{Command: "true"})
			if err == nil {
				require.Zero(t, res.ExitCode, "true exits 0 or answers no result")
			}
			return err
		},
		"read": func(ctx context.Context, sb ports.Sandbox) error {
			_, err := sb.ReadFile(ctx, "/workspace/big")
			return err
		},
		"read-stream": func(ctx context.Context, sb ports.Sandbox) error {
			rc, _, err := sb.ReadFileStream(ctx, "/workspace/big", 1<<20)
			if err != nil {
				return err
			}
			defer func() { _ = rc.Close() }()
			_, err = io.Copy(io.Discard, rc)
			return err
		},
		"write": func(ctx context.Context, sb ports.Sandbox) error {
			return sb.WriteFile(ctx, "/workspace/w", big)
		},
		"write-files": func(ctx context.Context, sb ports.Sandbox) error {
			return sb.WriteFiles(ctx, []sandbox.FileWrite{{Path: "/workspace/a/b", Data: big}})
		},
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			sb, ctrName := w.sandbox(t)
			require.NoError(t, sb.WriteFile(t.Context(), "/workspace/big", big))
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			time.AfterFunc(700*time.Millisecond, func() { w.takeAway(t, ctrName, "remove") })
			for n := 0; ; n++ {
				start := time.Now()
				err := call(ctx, sb)
				if err != nil {
					require.ErrorIs(t, err, sandbox.ErrNotFound, "call %d", n)
					require.Less(t, time.Since(start), goneWithin, "call %d must answer promptly", n)
					return
				}
			}
		})
	}
}
