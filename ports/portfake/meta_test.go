package portfake_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/ports/portfake"
)

func TestSandboxMeta(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := portfake.NewProvider()
	sb, err := p.Provision(ctx, sandbox.Spec{SessionID: domain.NewID("ses"), Image: "img"})
	require.NoError(t, err)
	box := sb.(*portfake.Sandbox)
	box.Put("/w/a/f", []byte("abc"))

	fi, err := sb.Stat(ctx, "/w/a")
	require.NoError(t, err)
	require.Equal(t, sandbox.FileInfo{Name: "/w/a", Type: sandbox.TypeDir, Size: 4096, Mode: 0o755, ModTime: portfake.ModTime}, fi)
	_, err = sb.Stat(ctx, "/w/a/f/x")
	require.ErrorIs(t, err, sandbox.ErrNotDirectory)
	_, err = sb.Stat(ctx, "/w/b")
	require.ErrorIs(t, err, sandbox.ErrFileNotExist)

	require.ErrorIs(t, sb.Mkdir(ctx, "/w/n/m", false), sandbox.ErrFileNotExist)
	require.NoError(t, sb.Mkdir(ctx, "/w/n/m", true))
	require.ErrorIs(t, sb.Mkdir(ctx, "/w/n", false), sandbox.ErrIsDirectory)
	require.ErrorIs(t, sb.Mkdir(ctx, "/w/a/f", true), sandbox.ErrNotDirectory)

	infos, err := sb.List(ctx, "/w")
	require.NoError(t, err)
	require.Equal(t, []string{"a", "n"}, []string{infos[0].Name, infos[1].Name})
	_, err = sb.List(ctx, "/w/a/f")
	require.ErrorIs(t, err, sandbox.ErrNotDirectory)
	root, err := sb.List(ctx, "/")
	require.NoError(t, err)
	require.Len(t, root, 1)

	require.ErrorIs(t, sb.Remove(ctx, "/w/a", false), sandbox.ErrIsDirectory)
	require.NoError(t, sb.Remove(ctx, "/w/a", true))
	require.Nil(t, box.File("/w/a/f"))
	require.Error(t, sb.Remove(ctx, "/", true))
	require.ErrorIs(t, sb.Remove(ctx, "/w/a", true), sandbox.ErrFileNotExist)
	infos, err = sb.List(ctx, "/w")
	require.NoError(t, err)
	require.Len(t, infos, 1, "the removed tree's parent stays")
	require.Equal(t, 3, p.Calls(portfake.OpRemove), "an invalid path is refused before the call counts")
}
