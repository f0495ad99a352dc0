package proxy

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// recordDials replaces the proxy's dialer: every address it is asked for is
// recorded and the dial fails (or blocks until ctx ends), so a test can
// show what would be dialled without any traffic leaving loopback.
type recordDials struct {
	mu    sync.Mutex
	addrs []string
	block bool
}

func (r *recordDials) dial(ctx context.Context, _, addr string) (net.Conn, error) {
	r.mu.Lock()
	r.addrs = append(r.addrs, addr)
	r.mu.Unlock()
	if r.block {
		<-ctx.Done()
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: ctx.Err()}
	}
	return nil, &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
}

func (r *recordDials) dialled() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.addrs...)
}

func TestUpstreamFailures(t *testing.T) {
	t.Parallel()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	deadPort := closed.Addr().(*net.TCPAddr).Port
	require.NoError(t, closed.Close())
	res := &fakeResolver{answers: map[string][][]netip.Addr{"slow.test": {addrs("127.0.0.1")}}}
	cfg := limited([]string{"127.0.0.1", "slow.test", "nxdomain.test"}, nil, nil)
	for _, tc := range []struct {
		name   string
		url    string
		block  bool
		status int
		reason string
	}{
		{"dns failure", "http://nxdomain.test/", false, http.StatusBadGateway, reasonDNS},
		{"connection refused", "http://127.0.0.1:" + itoa(deadPort) + "/", false, http.StatusBadGateway, reasonUpstream},
		{"dial timeout", "http://slow.test/", true, http.StatusGatewayTimeout, reasonDialTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := start(t, Options{Resolve: res.resolve, DialTimeout: 200 * time.Millisecond}, &cfg)
			if tc.block {
				h.p.dialAddr = (&recordDials{block: true}).dial
			}
			status, body := get(t, h.client(nil), tc.url, nil)
			require.Equal(t, tc.status, status)
			require.Equal(t, fixedBody(tc.reason), body, "never Go error text")
			// The same through CONNECT.
			resp, body := rawRequest(t, h.addr, "CONNECT "+hostOf(tc.url)+" HTTP/1.1\r\nHost: x\r\n\r\n")
			require.Equal(t, tc.status, resp.StatusCode)
			require.Equal(t, fixedBody(tc.reason), body)
		})
	}
}

func TestRebinding(t *testing.T) {
	t.Parallel()
	cfg := unrestricted()
	t.Run("mixed answer refused without a dial", func(t *testing.T) {
		t.Parallel()
		res := &fakeResolver{answers: map[string][][]netip.Addr{"rebind.test": {addrs("1.1.1.1", "127.0.0.1")}}}
		h := start(t, Options{Resolve: res.resolve}, &cfg)
		rec := &recordDials{}
		h.p.dialAddr = rec.dial
		status, _ := get(t, h.client(nil), "http://rebind.test/", nil)
		require.Equal(t, http.StatusForbidden, status)
		require.Empty(t, rec.dialled())
		require.Equal(t, "floor:loopback", attr(h.spans.wait(t, 1)[0], "sandgate.rule").AsString())
	})
	t.Run("second answer never used", func(t *testing.T) {
		t.Parallel()
		res := &fakeResolver{answers: map[string][][]netip.Addr{"rebind.test": {addrs("1.1.1.1"), addrs("127.0.0.1")}}}
		h := start(t, Options{Resolve: res.resolve}, &cfg)
		rec := &recordDials{}
		h.p.dialAddr = rec.dial
		status, _ := get(t, h.client(nil), "http://rebind.test/", nil)
		require.Equal(t, http.StatusBadGateway, status)
		require.Equal(t, int32(1), res.calls.Load(), "resolve once per dial")
		require.Equal(t, []string{"1.1.1.1:80"}, rec.dialled(), "dial exactly the checked address")
	})
}
