package kubernetes

import (
	"context"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/sandbox"
)

// scripted is an execer that answers every exec with fixed output and exit
// code, standing in for a sandbox whose stream the cluster cannot be made to
// cut on demand.
type scripted struct {
	stdout, stderr string
	code           int
	err            error
}

func (s scripted) exec(_ context.Context, _, _ string, _ []string, _ io.Reader, stdout, stderr io.Writer) (int, error) {
	_, _ = io.WriteString(stdout, s.stdout)
	_, _ = io.WriteString(stderr, s.stderr)
	return s.code, s.err
}

func scriptedHandle(s scripted) *handle {
	return &handle{p: &Provider{ex: s}, ns: "default", name: "sandgate-x", uid: "u", workdir: "/workspace"}
}

func TestReadFileStreamVerifiesTheEnd(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	rc, n, err := scriptedHandle(scripted{stdout: "5\nhello"}).ReadFileStream(ctx, "/f", 10)
	require.NoError(t, err)
	require.Equal(t, int64(5), n)
	b, err := io.ReadAll(rc)
	require.NoError(t, err)
	require.Equal(t, "hello", string(b))
	require.NoError(t, rc.Close())

	// Every announced byte arrived, but the script failed afterwards: the
	// end is not clean (B-6).
	rc, _, err = scriptedHandle(scripted{stdout: "5\nhello", code: 1, stderr: "boom"}).ReadFileStream(ctx, "/f", 10)
	require.NoError(t, err)
	_, err = io.ReadAll(rc)
	require.ErrorContains(t, err, "exited 1")
	require.NoError(t, rc.Close())

	// A stream cut short is an error, never a shorter file.
	rc, _, err = scriptedHandle(scripted{stdout: "5\nhel"}).ReadFileStream(ctx, "/f", 10)
	require.NoError(t, err)
	_, err = io.ReadAll(rc)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	require.NoError(t, rc.Close())

	// More than announced is refused too.
	rc, _, err = scriptedHandle(scripted{stdout: "5\nhello!"}).ReadFileStream(ctx, "/f", 10)
	require.NoError(t, err)
	_, err = io.ReadAll(rc)
	require.ErrorContains(t, err, "more bytes than announced")
	require.NoError(t, rc.Close())
}

func TestReadFileStreamSentinels(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, _, err := scriptedHandle(scripted{code: sandbox.ExitFileNotExist}).ReadFileStream(ctx, "/f", 10)
	require.ErrorIs(t, err, sandbox.ErrFileNotExist)
	_, _, err = scriptedHandle(scripted{code: sandbox.ExitFileTooLarge}).ReadFileStream(ctx, "/f", 10)
	require.ErrorIs(t, err, sandbox.ErrFileTooLarge)
	_, _, err = scriptedHandle(scripted{stdout: "99\n"}).ReadFileStream(ctx, "/f", 10)
	require.Error(t, err, "a header above maxBytes is refused")
}
