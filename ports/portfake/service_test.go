package portfake_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/core/session"
	"github.com/sandgate/sandgate/ports"
	"github.com/sandgate/sandgate/ports/portfake"
)

func readAll(t *testing.T, rc io.ReadCloser) string {
	t.Helper()
	b, err := io.ReadAll(rc)
	require.NoError(t, err)
	require.NoError(t, rc.Close())
	return string(b)
}

func TestServiceRecordsAndAnswers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := portfake.NewService()
	req := session.Request{Image: "img:1", Workdir: "/w"}
	got, err := s.Provision(ctx, domain.MustParseSessionID("ses_a"), req)
	require.NoError(t, err)
	require.Equal(t, portfake.Info(domain.MustParseSessionID("ses_a")), got)
	require.Equal(t, req, s.Request())
	got, err = s.Get(ctx, domain.MustParseSessionID("ses_a"))
	require.NoError(t, err)
	require.Equal(t, portfake.Info(domain.MustParseSessionID("ses_a")), got)
	list, err := s.List(ctx)
	require.NoError(t, err)
	require.Empty(t, list)
	s.Infos = []ports.SessionInfo{{ID: domain.MustParseSessionID("ses_b"), State: ports.StateStopped}}
	list, err = s.List(ctx)
	require.NoError(t, err)
	require.Equal(t, s.Infos, list)

	s.ExecResult = sandbox.ExecResult{Stdout: "out", ExitCode: 7}
	res, err := s.Exec(ctx, domain.MustParseSessionID("ses_a"), sandbox.ExecRequest{Command: "ls"})
	require.NoError(t, err)
	require.Equal(t, s.ExecResult, res)
	require.Equal(t, sandbox.ExecRequest{Command: "ls"}, s.ExecRequest())

	require.NoError(t, s.WriteFile(ctx, domain.MustParseSessionID("ses_a"), "/w/f", strings.NewReader("hello"), 5))
	require.ErrorIs(t, s.WriteFile(ctx, domain.MustParseSessionID("ses_a"), "/w/g", strings.NewReader("hell"), 5), portfake.ErrShortWrite)
	require.Nil(t, s.File(domain.MustParseSessionID("ses_a"), "/w/g"), "a short stream stores nothing")
	require.Equal(t, "hello", string(s.File(domain.MustParseSessionID("ses_a"), "/w/f")))
	require.Nil(t, s.File(domain.MustParseSessionID("ses_b"), "/w/f"), "files are per session")
	rc, n, err := s.ReadFile(ctx, domain.MustParseSessionID("ses_a"), "/w/f", 100)
	require.NoError(t, err)
	require.Equal(t, int64(5), n)
	require.Equal(t, "hello", readAll(t, rc))
	require.Equal(t, int64(100), s.MaxBytes())
	_, _, err = s.ReadFile(ctx, domain.MustParseSessionID("ses_b"), "/w/f", 100)
	require.ErrorIs(t, err, sandbox.ErrFileNotExist)

	batch := []sandbox.FileWrite{{Path: "/w/x", Data: []byte("x")}}
	require.NoError(t, s.WriteFiles(ctx, domain.MustParseSessionID("ses_a"), batch))
	require.Equal(t, batch, s.Batch())
	rc, err = s.Export(ctx, domain.MustParseSessionID("ses_a"), "/w")
	require.NoError(t, err)
	require.Equal(t, "tar:/w", readAll(t, rc))
	require.NoError(t, s.Delete(ctx, domain.MustParseSessionID("ses_a"), false))
	require.NoError(t, s.Delete(ctx, domain.MustParseSessionID("ses_a"), true))
	require.Equal(t, []bool{false, true}, s.Deleted())

	require.Equal(t, []string{
		"provision ses_a", "get ses_a", "list", "list", "exec ses_a", "write ses_a /w/f", "write ses_a /w/g",
		"read ses_a /w/f", "read ses_b /w/f", "batch ses_a", "export ses_a /w", "delete ses_a", "delete ses_a",
	}, s.Calls())
}

func TestServiceValidatesAProvision(t *testing.T) {
	t.Parallel()
	s := portfake.NewService()
	_, err := s.Provision(context.Background(), domain.MustParseSessionID("ses_a"), session.Request{Workdir: "relative"})
	require.ErrorIs(t, err, session.ErrInvalidRequest)
	require.Equal(t, session.Request{}, s.Request(), "a refused request is not kept")
	require.Equal(t, []string{"provision ses_a"}, s.Calls(), "but the call is recorded")
}

func TestServiceErrIsAnsweredAfterRecording(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := portfake.NewService()
	boom := errors.New("boom")
	s.Err = boom
	_, err := s.Provision(ctx, domain.MustParseSessionID("ses_a"), session.Request{})
	require.ErrorIs(t, err, boom)
	_, err = s.Get(ctx, domain.MustParseSessionID("ses_a"))
	require.ErrorIs(t, err, boom)
	require.ErrorIs(t, s.Delete(ctx, domain.MustParseSessionID("ses_a"), false), boom)
	_, err = s.List(ctx)
	require.ErrorIs(t, err, boom)
	_, err = s.Exec(ctx, domain.MustParseSessionID("ses_a"), sandbox.ExecRequest{Command: "ls"})
	require.ErrorIs(t, err, boom)
	_, _, err = s.ReadFile(ctx, domain.MustParseSessionID("ses_a"), "/f", 1)
	require.ErrorIs(t, err, boom)
	require.ErrorIs(t, s.WriteFile(ctx, domain.MustParseSessionID("ses_a"), "/f", strings.NewReader("x"), 1), boom)
	require.ErrorIs(t, s.WriteFiles(ctx, domain.MustParseSessionID("ses_a"), nil), boom)
	_, err = s.Export(ctx, domain.MustParseSessionID("ses_a"), "/w")
	require.ErrorIs(t, err, boom)
	require.Len(t, s.Calls(), 9)
	require.Empty(t, s.Deleted())
	require.Nil(t, s.File(domain.MustParseSessionID("ses_a"), "/f"))
}

func TestServiceCheckpointsOverstateAndStreams(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := portfake.NewService()
	s.NoCheckpoints = true
	require.ErrorIs(t, s.Delete(ctx, domain.MustParseSessionID("ses_a"), true), ports.ErrNotImplemented)
	require.NoError(t, s.Delete(ctx, domain.MustParseSessionID("ses_a"), false))
	require.Equal(t, []bool{false}, s.Deleted(), "a refused delete is not counted as one")

	s.Put(domain.MustParseSessionID("ses_a"), "/f", []byte("abc"))
	s.Overstate = 5
	rc, n, err := s.ReadFile(ctx, domain.MustParseSessionID("ses_a"), "/f", 100)
	require.NoError(t, err)
	require.Equal(t, int64(8), n, "the size is overstated")
	require.Equal(t, "abc", readAll(t, rc))

	var sunk string
	s.Sink = func(src io.Reader, size int64) error {
		b, err := io.ReadAll(src)
		sunk = string(b)
		require.Equal(t, int64(3), size)
		return err
	}
	require.NoError(t, s.WriteFile(ctx, domain.MustParseSessionID("ses_a"), "/g", strings.NewReader("xyz"), 3))
	require.Equal(t, "xyz", sunk)
	require.Nil(t, s.File(domain.MustParseSessionID("ses_a"), "/g"), "the sink took the stream")

	s.Source = func() (io.ReadCloser, int64) { return io.NopCloser(strings.NewReader("src")), 42 }
	rc, n, err = s.ReadFile(ctx, domain.MustParseSessionID("ses_a"), "/f", 100)
	require.NoError(t, err)
	require.Equal(t, int64(42), n)
	require.Equal(t, "src", readAll(t, rc))
	s.ExportSource = func() io.ReadCloser { return io.NopCloser(strings.NewReader("exported")) }
	rc, err = s.Export(ctx, domain.MustParseSessionID("ses_a"), "/w")
	require.NoError(t, err)
	require.Equal(t, "exported", readAll(t, rc))
}
