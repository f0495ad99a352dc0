package portfake_test

import (
	"context"
	"io"
	"net"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/ports/portfake"
)

func TestDialPortReachesWhatServes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := portfake.NewProvider()
	sb, err := p.Provision(ctx, sandbox.Spec{SessionID: domain.MustParseSessionID("ses_port"), Image: "img", Workdir: "/w"})
	require.NoError(t, err)
	_, err = sb.DialPort(ctx, 8080)
	require.ErrorIs(t, err, sandbox.ErrPortClosed)
	_, err = sb.DialPort(ctx, 0)
	require.ErrorIs(t, err, sandbox.ErrInvalidPort)

	sb.(*portfake.Sandbox).Serve(8080, func(c net.Conn) { _, _ = io.WriteString(c, "hi") })
	conn, err := sb.DialPort(ctx, 8080)
	require.NoError(t, err)
	got, err := io.ReadAll(conn)
	require.NoError(t, err)
	require.Equal(t, "hi", string(got))
	require.NoError(t, conn.Close())
	require.Equal(t, 3, p.Calls(portfake.OpDialPort))

	require.NoError(t, p.Reap(ctx, domain.MustParseSessionID("ses_port")))
	_, err = sb.DialPort(ctx, 8080)
	require.ErrorIs(t, err, sandbox.ErrNotFound)
}
