package agentclient

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/agentwire"
	"github.com/sandgate/sandgate/core/sandbox"
)

// echoForward answers a forward as the agent does, its "server" greeting
// right behind the 101 (in the same write, so the client's reader holds
// it) and then echoing to EOF.
func echoForward(w http.ResponseWriter, r *http.Request) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	defer func() { _ = conn.Close() }()
	if r.URL.Query().Get(agentwire.QueryPort) != "8080" {
		return
	}
	_, _ = io.WriteString(conn, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: "+
		agentwire.ForwardProtocol+"\r\n\r\nhi:")
	_, _ = io.Copy(conn, conn)
}

func TestDialCarriesBytesBothWays(t *testing.T) {
	t.Parallel()
	_, c := newFake(t, echoForward)
	conn, err := c.Dial(context.Background(), 8080)
	require.NoError(t, err)
	defer func() { _ = conn.Close() }()
	_, err = io.WriteString(conn, "ping")
	require.NoError(t, err)
	require.NoError(t, conn.(interface{ CloseWrite() error }).CloseWrite())
	got, err := io.ReadAll(conn)
	require.NoError(t, err)
	require.Equal(t, "hi:ping", string(got), "the bytes behind the 101 come first")
}

func TestDialClassifiesTheAgentsRefusal(t *testing.T) {
	t.Parallel()
	_, c := newFake(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadGateway)
		_ = json.NewEncoder(w).Encode(agentwire.Error{Code: agentwire.CodeConnectionRefused, Message: "port 8080: refused"})
	})
	_, err := c.Dial(context.Background(), 8080)
	require.ErrorIs(t, err, sandbox.ErrPortClosed)
}

func TestDialRefusesABadPortBeforeTheAgent(t *testing.T) {
	t.Parallel()
	f, c := newFake(t, echoForward)
	for _, port := range []int{0, -1, 65536} {
		_, err := c.Dial(context.Background(), port)
		require.ErrorIs(t, err, sandbox.ErrInvalidPort)
	}
	require.Zero(t, f.opened.Load())
}

func TestDialEndsWithItsContext(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	_, c := newFake(t, func(http.ResponseWriter, *http.Request) { <-release })
	t.Cleanup(func() { close(release) })
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := c.Dial(ctx, 8080)
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestPlaneDialPortWithoutAgent(t *testing.T) {
	t.Parallel()
	_, err := Plane{}.DialPort(context.Background(), 8080)
	require.ErrorIs(t, err, sandbox.ErrNoAgent)
	_, err = Plane{}.DialPort(context.Background(), 0)
	require.ErrorIs(t, err, sandbox.ErrInvalidPort)
}
