//go:build integration

package docker_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/adapters/docker"
	"github.com/sandgate/sandgate/adapters/docker/dockertest"
	"github.com/sandgate/sandgate/core/sandbox"
)

// TestAgentProcs: a proc in a real sandbox, over the agent: its output read
// from an offset, stdin round-tripped while it runs, and a PTY whose `tty`
// answers a terminal device and whose resize `stty size` sees.
func TestAgentProcs(t *testing.T) {
	cli := dockertest.Client(t)
	sb, _ := agentBox(t, cli, dockertest.AgentImage(t, cli))
	c := docker.AgentConn(sb)
	require.NotNil(t, c, "the sandbox has its agent")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	p, err := c.StartProc(ctx, sandbox.ProcStart{Command: "seq 1 1000; cat", Tag: "it"})
	require.NoError(t, err)
	const seqBytes = 3893 // seq 1 1000; 998 is at 3880
	require.Eventually(t, func() bool {
		info, err := c.Proc(ctx, p.ID)
		return err == nil && info.StdoutBytes == seqBytes
	}, time.Minute, 20*time.Millisecond)
	var got strings.Builder
	info, err := c.ProcOutput(ctx, p.ID, sandbox.ProcOutputQuery{Stream: sandbox.StreamStdout, From: 3880},
		func(ch sandbox.ProcChunk) error {
			got.Write(ch.Data)
			return nil
		})
	require.NoError(t, err)
	require.Equal(t, sandbox.ProcRunning, info.State)
	require.Equal(t, "998\n999\n1000\n", got.String(), "from the offset of 998")

	require.NoError(t, c.ProcStdin(ctx, p.ID, strings.NewReader("ping\n"), true))
	info, err = c.WaitProc(ctx, p.ID)
	require.NoError(t, err)
	require.Equal(t, 0, info.ExitCode)
	got.Reset()
	_, err = c.ProcOutput(ctx, p.ID, sandbox.ProcOutputQuery{From: info.StdoutBytes - 5}, func(ch sandbox.ProcChunk) error {
		got.Write(ch.Data)
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, "ping\n", got.String())

	tty, err := c.StartProc(ctx, sandbox.ProcStart{Command: "tty; read x; stty size", TTY: true, Cols: 100, Rows: 33})
	require.NoError(t, err)
	require.NoError(t, c.ResizeProc(ctx, tty.ID, 140, 50))
	require.NoError(t, c.ProcStdin(ctx, tty.ID, strings.NewReader("\n"), false))
	_, err = c.WaitProc(ctx, tty.ID)
	require.NoError(t, err)
	got.Reset()
	_, err = c.ProcOutput(ctx, tty.ID, sandbox.ProcOutputQuery{}, func(ch sandbox.ProcChunk) error {
		got.Write(ch.Data)
		return nil
	})
	require.NoError(t, err)
	require.Regexp(t, `/dev/pts/\d+\r\n`, got.String())
	require.True(t, strings.HasSuffix(got.String(), "50 140\r\n"), "%q", got.String())

	require.NoError(t, c.RemoveProc(ctx, p.ID))
	require.NoError(t, c.RemoveProc(ctx, tty.ID))
	_, err = c.Proc(ctx, p.ID)
	require.ErrorIs(t, err, sandbox.ErrProcNotFound)
}
