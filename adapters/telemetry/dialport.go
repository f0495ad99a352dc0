package telemetry

import (
	"context"
	"net"

	"go.opentelemetry.io/otel/attribute"
)

// DialPort implements ports.Sandbox: the span covers the dial, not the
// connection's life.
func (s *Sandbox) DialPort(ctx context.Context, port int) (conn net.Conn, err error) {
	s.op(ctx, "DialPort", func(ctx context.Context) error {
		conn, err = s.next.DialPort(ctx, port)
		return err
	}, attribute.Int("sandgate.port", port))
	return conn, err
}
