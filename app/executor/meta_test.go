package executor

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/core/session"
	"github.com/sandgate/sandgate/ports/portfake"
)

func TestMetaCalls(t *testing.T) {
	t.Parallel()
	e, sid := provisioned(t, session.Request{})
	ctx := context.Background()
	require.NoError(t, e.svc.Mkdir(ctx, sid, "/w/d/e", true))
	require.ErrorIs(t, e.svc.Mkdir(ctx, sid, "/w/d/e", false), sandbox.ErrIsDirectory)
	require.NoError(t, e.svc.WriteFiles(ctx, sid, []sandbox.FileWrite{{Path: "/w/d/f", Data: []byte("abc")}}))

	fi, err := e.svc.Stat(ctx, sid, "/w/d/f")
	require.NoError(t, err)
	require.Equal(t, sandbox.FileInfo{Name: "/w/d/f", Type: sandbox.TypeFile, Size: 3, Mode: 0o644, ModTime: portfake.ModTime}, fi)
	infos, err := e.svc.ListDir(ctx, sid, "/w/d")
	require.NoError(t, err)
	require.Equal(t, []string{"e", "f"}, []string{infos[0].Name, infos[1].Name})

	require.ErrorIs(t, e.svc.Remove(ctx, sid, "/w/d", false), sandbox.ErrIsDirectory)
	require.NoError(t, e.svc.Remove(ctx, sid, "/w/d", true))
	_, err = e.svc.Stat(ctx, sid, "/w/d/f")
	require.ErrorIs(t, err, sandbox.ErrFileNotExist)

	missing := domain.NewID("ses")
	_, err = e.svc.ListDir(ctx, missing, "/")
	require.ErrorIs(t, err, sandbox.ErrNotFound)
}

// A cached handle whose sandbox went away is dropped and the call runs once
// more on a fresh one, as for the other operations.
func TestMetaRetriesAStaleHandle(t *testing.T) {
	t.Parallel()
	e, sid := provisioned(t, session.Request{})
	ctx := context.Background()
	_, err := e.svc.Stat(ctx, sid, "/")
	require.NoError(t, err)
	attaches := e.prov.Calls(portfake.OpAttach)
	for _, op := range []portfake.Op{portfake.OpStat, portfake.OpList, portfake.OpRemove, portfake.OpMkdir} {
		e.prov.FailNext(op, 1, fmt.Errorf("stale: %w", sandbox.ErrNotFound))
	}
	_, err = e.svc.Stat(ctx, sid, "/")
	require.NoError(t, err)
	_, err = e.svc.ListDir(ctx, sid, "/")
	require.NoError(t, err)
	require.NoError(t, e.svc.Mkdir(ctx, sid, "/w", true))
	require.NoError(t, e.svc.Remove(ctx, sid, "/w", true))
	require.Equal(t, attaches+4, e.prov.Calls(portfake.OpAttach))
}

// A streamed exec whose sandbox went away after output reached the caller
// is not run again on a fresh handle (its pieces would restart at offset
// 0); one that is not streamed is.
func TestStreamedExecNotRetriedAfterOutput(t *testing.T) {
	t.Parallel()
	e, sid := provisioned(t, session.Request{})
	ctx := context.Background()
	var got []string
	sink := outputFunc(func(_ sandbox.Stream, offset int64, data []byte) {
		got = append(got, fmt.Sprintf("%d:%s", offset, data))
	})
	e.prov.FailNext(portfake.OpExec, 1, fmt.Errorf("stale: %w", sandbox.ErrNotFound))
	_, err := e.svc.Exec(ctx, sid, sandbox.ExecRequest{Command: "echo hi", Output: sink})
	require.ErrorIs(t, err, sandbox.ErrNotFound)
	require.Equal(t, []string{"0:echo hi"}, got, "one run's output, once")

	_, err = e.svc.Exec(ctx, sid, sandbox.ExecRequest{Command: "true"}) // a cached handle again
	require.NoError(t, err)
	e.prov.FailNext(portfake.OpExec, 1, fmt.Errorf("stale: %w", sandbox.ErrNotFound))
	res, err := e.svc.Exec(ctx, sid, sandbox.ExecRequest{Command: "echo again"})
	require.NoError(t, err)
	require.Equal(t, "echo again", res.Stdout)
}

type outputFunc func(sandbox.Stream, int64, []byte)

func (f outputFunc) Output(s sandbox.Stream, offset int64, data []byte) { f(s, offset, data) }
