package executor

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/core/session"
)

func TestDialPortKeepsItsSessionUntilClosed(t *testing.T) {
	t.Parallel()
	r := newReapEnv(t, 1<<20)
	ctx := context.Background()
	sid := r.provision(t, nil)
	r.prov.Box(sid).Serve(8080, func(c net.Conn) { _, _ = io.WriteString(c, "up") })

	conn, err := r.svc.DialPort(ctx, sid, 8080)
	require.NoError(t, err)
	got := make([]byte, 2)
	_, err = io.ReadFull(conn, got)
	require.NoError(t, err)
	require.Equal(t, "up", string(got))
	require.ErrorIs(t, conn.(interface{ CloseWrite() error }).CloseWrite(), errNoHalfClose, "net.Pipe has none")
	r.clock.advance(time.Hour)
	require.Empty(t, r.reaper.Round(ctx), "a forwarded connection keeps its session")
	require.NoError(t, conn.Close())
	r.clock.advance(time.Hour)
	require.Len(t, r.reaper.Round(ctx), 1, "closed, the session idles again")
}

func TestDialPortErrors(t *testing.T) {
	t.Parallel()
	r := newReapEnv(t, 1<<20)
	ctx := context.Background()
	sid := r.provision(t, nil)
	_, err := r.svc.DialPort(ctx, sid, 0)
	require.ErrorIs(t, err, session.ErrInvalidRequest)
	require.ErrorIs(t, err, sandbox.ErrInvalidPort)
	_, err = r.svc.DialPort(ctx, sid, 8080)
	require.ErrorIs(t, err, sandbox.ErrPortClosed)
	r.clock.advance(time.Hour)
	require.Len(t, r.reaper.Round(ctx), 1, "a failed dial leaves the session idle")
}
