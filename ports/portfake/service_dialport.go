package portfake

import (
	"context"
	"net"
	"strconv"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
)

// DialPort records the call ("dial SID PORT") and answers Dial's
// connection, or sandbox.ErrPortClosed without Dial.
func (f *Service) DialPort(_ context.Context, sid domain.ID, port int) (net.Conn, error) {
	if err := f.record("dial " + sid.String() + " " + strconv.Itoa(port)); err != nil {
		return nil, err
	}
	f.mu.Lock()
	dial := f.Dial
	f.mu.Unlock()
	if dial == nil {
		return nil, sandbox.ErrPortClosed
	}
	return dial(port)
}
