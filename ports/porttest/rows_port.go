package porttest

import (
	"fmt"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
)

// portServer is a TCP server for the port rows, in perl (the images' one
// language with sockets; bash cannot listen): on 127.0.0.1:port it answers
// each connection with "echo:" and what it read up to EOF, so a reply
// proves the half-close crossed. It leaves its process group (setsid), so
// the exec that starts it returns with it still running, and says it is up
// in /tmp/port-up-<port>. Its one argument is the port.
const portServer = `set -- %d
setsid perl -MIO::Socket::INET -e '
my $s = IO::Socket::INET->new(LocalAddr => "127.0.0.1", LocalPort => $ARGV[0], Listen => 8, ReuseAddr => 1)
	or die "listen: $!";
open(my $f, ">", "/tmp/port-up-$ARGV[0]") or die; close $f;
while (my $c = $s->accept) { local $/; my $d = <$c>; print $c "echo:$d"; close $c; }
' "$1" </dev/null >/dev/null 2>&1 &
for i in $(seq 100); do [ -e /tmp/port-up-$1 ] && exit 0; sleep 0.1; done; exit 1`

// portRows: DialPort (C-PORT-1, issue 14), which the agent carries; a
// backend's engine-exec path has no byte stream to carry it.
func portRows() []capRow {
	return []capRow{
		{with(viaAgent), row{"C-PORT-1/served-port-echoes", func(t *testing.T, s *suite) {
			// A limited sandbox without a gate has no network at all: the
			// port is reached from inside, not through it.
			sb := s.provision(t, sandbox.Spec{Networking: domain.Networking{Type: domain.NetLimited}})
			sh(t, sb, fmt.Sprintf(portServer, 7070))
			for range 2 { // one connection after another: the server and the route live on
				conn, err := sb.DialPort(ctx(t), 7070)
				require.NoError(t, err)
				_, err = io.WriteString(conn, "hello")
				require.NoError(t, err)
				require.NoError(t, conn.(interface{ CloseWrite() error }).CloseWrite())
				got, err := io.ReadAll(conn)
				require.NoError(t, err)
				require.Equal(t, "echo:hello", string(got))
				require.NoError(t, conn.Close())
			}
			_, err := sb.DialPort(ctx(t), 7071)
			require.ErrorIs(t, err, sandbox.ErrPortClosed)
			_, err = sb.DialPort(ctx(t), 0)
			require.ErrorIs(t, err, sandbox.ErrInvalidPort)
		}}},
		{without(viaAgent), row{"C-PORT-1/no-agent-is-classified", func(t *testing.T, s *suite) {
			sb := s.fresh(t)
			_, err := sb.DialPort(ctx(t), 7070)
			require.ErrorIs(t, err, sandbox.ErrNoAgent)
			_, err = sb.DialPort(ctx(t), 70000)
			require.ErrorIs(t, err, sandbox.ErrInvalidPort)
		}}},
	}
}
