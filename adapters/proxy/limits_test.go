package proxy

import (
	"compress/gzip"
	"context"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// requireCut reads r to its end and requires the proxy to have closed the
// connection (EOF or a reset), never our own deadline, and no response.
func requireCut(t *testing.T, r io.Reader, msg string) {
	t.Helper()
	start := time.Now()
	got, err := io.ReadAll(r)
	require.False(t, isTimeout(err), "%s: the proxy never closed the tunnel: %v", msg, err)
	require.Empty(t, string(got), msg)
	require.Less(t, time.Since(start), 5*time.Second, msg)
}

// streamHead writes a request head whose one header never ends, size
// bytes long, ignoring write errors (the proxy may close first).
func streamHead(w io.Writer, authority string, size int) {
	_, _ = io.WriteString(w, "GET / HTTP/1.1\r\nHost: "+authority+"\r\nX-Long: ")
	chunk := strings.Repeat("a", 64<<10)
	for n := 0; n < size; n += len(chunk) {
		if _, err := io.WriteString(w, chunk); err != nil {
			return
		}
	}
}

func TestInterceptHeadCap(t *testing.T) {
	t.Parallel()
	o, h, _ := mitmSetup(t, echo(nil), Options{})
	authority := "api.example.com:" + o.port()
	for _, tc := range []struct {
		name  string
		first bool // answer one request on the tunnel before the long head
	}{
		{"first head", false},
		{"head after an answer", true},
	} {
		conn, br := innerTLS(t, h, authority, "api.example.com")
		if tc.first {
			_, err := io.WriteString(conn, "GET /one HTTP/1.1\r\nHost: "+authority+"\r\n\r\n")
			require.NoError(t, err)
			resp, err := http.ReadResponse(br, nil)
			require.NoError(t, err, tc.name)
			_, err = io.Copy(io.Discard, resp.Body)
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, resp.StatusCode, tc.name)
		}
		go streamHead(conn, authority, 2*maxHeadBytes)
		requireCut(t, br, tc.name)
	}
}

// A body is no head: an upload far over the head cap, then another
// request, still go through on one tunnel, whether the upload is read
// upstream or refused unread (it is drained as part of its answer).
func TestInterceptBodyIsNotAHead(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		refuse bool
		status int
		want   []string // each response body's start
	}{
		{"read upstream", false, http.StatusOK, []string{"POST /up ", "GET /two "}},
		{"refused unread", true, http.StatusForbidden, []string{fixedBody(reasonDenied), fixedBody(reasonDenied)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o, h, cfg := mitmSetup(t, echo(nil), Options{})
			authority := "api.example.com:" + o.port()
			conn, br := innerTLS(t, h, authority, "api.example.com")
			if tc.refuse {
				cfg.Networking.AllowedHosts = anyPort("other.example.com", "127.0.0.1")
				require.NoError(t, h.p.SetConfig(cfg))
			}
			body := strings.Repeat("b", 3*maxHeadBytes)
			go func() {
				_, _ = io.WriteString(conn, "POST /up HTTP/1.1\r\nHost: "+authority+"\r\nContent-Length: "+itoa(len(body))+"\r\n\r\n"+body)
				_, _ = io.WriteString(conn, "GET /two HTTP/1.1\r\nHost: "+authority+"\r\n\r\n")
			}()
			for _, want := range tc.want {
				resp, err := http.ReadResponse(br, nil)
				require.NoError(t, err, want)
				got, err := io.ReadAll(resp.Body)
				require.NoError(t, err, want)
				require.Equal(t, tc.status, resp.StatusCode, want)
				require.True(t, strings.HasPrefix(string(got), want), "%s: %q", want, got)
			}
		})
	}
}

func TestInterceptSetupDeadline(t *testing.T) {
	t.Parallel()
	o, h, _ := mitmSetup(t, echo(nil), Options{HeaderTimeout: 300 * time.Millisecond})
	authority := "api.example.com:" + o.port()
	t.Run("no handshake", func(t *testing.T) {
		t.Parallel()
		conn, br := connect(t, h.addr, authority)
		requireCut(t, &bufConn{Conn: conn, r: br}, "silent CONNECT")
	})
	t.Run("no request", func(t *testing.T) {
		t.Parallel()
		_, br := innerTLS(t, h, authority, "api.example.com")
		requireCut(t, br, "handshake without a request")
	})
	t.Run("idle after a request", func(t *testing.T) {
		t.Parallel()
		conn, br := innerTLS(t, h, authority, "api.example.com")
		for _, path := range []string{"/one", "/two"} {
			_, err := io.WriteString(conn, "GET "+path+" HTTP/1.1\r\nHost: "+authority+"\r\n\r\n")
			require.NoError(t, err)
			resp, err := http.ReadResponse(br, nil)
			require.NoError(t, err, path)
			_, err = io.Copy(io.Discard, resp.Body)
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, resp.StatusCode, path)
			// Idle past HeaderTimeout: the set-up deadline is gone once a
			// request was read (proving an absence needs a wait).
			time.Sleep(500 * time.Millisecond)
		}
	})
}

// A tunnel still dialling when Revoke runs is closed as soon as it is
// registered: it never relays.
func TestRevokeDuringDial(t *testing.T) {
	t.Parallel()
	o := newOrigin(t, echo(nil), false)
	cfg := limited([]string{"127.0.0.1"}, nil, nil)
	h := start(t, Options{}, &cfg)
	entered, release := make(chan struct{}), make(chan struct{})
	dial := h.p.dialAddr
	h.p.dialAddr = func(ctx context.Context, network, addr string) (net.Conn, error) {
		close(entered)
		<-release
		return dial(ctx, network, addr)
	}
	conn := dialProxy(t, h.addr)
	_, err := io.WriteString(conn, "CONNECT "+o.hostPort()+" HTTP/1.1\r\nHost: "+o.hostPort()+"\r\n\r\n")
	require.NoError(t, err)
	select {
	case <-entered:
	case <-time.After(testWait):
		require.FailNow(t, "the proxy never dialled")
	}
	h.p.Revoke()
	close(release)
	requireCut(t, conn, "a tunnel registered after Revoke")
}

// gzipEcho answers with the request's Authorization, gzipped unless the
// test asks for identity, whatever the request accepts; seen gets the
// request's Accept-Encoding and Range.
func gzipEcho(seen *atomic.Pointer[string]) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := "ae=" + r.Header.Get("Accept-Encoding") + "|range=" + r.Header.Get("Range")
		seen.Store(&s)
		echo := "echo " + r.Header.Get("Authorization")
		if r.URL.Query().Get("enc") == "identity" {
			w.Header().Set("Content-Encoding", "identity")
			_, _ = io.WriteString(w, echo)
			return
		}
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		_, _ = io.WriteString(zw, echo)
		_ = zw.Close()
	})
}

func TestCompressedEchoNeverPassesRedaction(t *testing.T) {
	t.Parallel()
	var seen atomic.Pointer[string]
	o := newOrigin(t, gzipEcho(&seen), false)
	res := &fakeResolver{answers: map[string][][]netip.Addr{"api.test": {addrs("127.0.0.1")}, "other.test": {addrs("127.0.0.1")}}}
	cfg := limited([]string{"api.test", "other.test", "127.0.0.1"}, []string{"api.test"}, nil)
	h := start(t, Options{Resolve: res.resolve}, &cfg)
	c := h.client(nil)
	hdr := func() http.Header {
		return http.Header{"Authorization": {phA}, "Accept-Encoding": {"gzip"}, "Range": {"bytes=0-3"}}
	}
	for _, tc := range []struct {
		name, url, seen string
		status          int
		body            string // exact, or "" to check it is gzip
	}{
		{"gzip with a redactor", "http://api.test:" + o.port() + "/", "ae=|range=", http.StatusBadGateway, fixedBody(reasonEncoded)},
		{"identity with a redactor", "http://api.test:" + o.port() + "/?enc=identity", "ae=|range=", http.StatusOK, "echo " + phA},
		{"no credentials bound", "http://other.test:" + o.port() + "/", "ae=gzip|range=bytes=0-3", http.StatusOK, ""},
	} {
		status, body := get(t, c, tc.url, hdr())
		require.Equal(t, tc.status, status, tc.name)
		require.Equal(t, tc.seen, *seen.Load(), tc.name)
		require.NotContains(t, body, secretA, tc.name)
		if tc.body != "" {
			require.Equal(t, tc.body, body, tc.name)
			continue
		}
		zr, err := gzip.NewReader(strings.NewReader(body))
		require.NoError(t, err, tc.name)
		plain, err := io.ReadAll(zr)
		require.NoError(t, err, tc.name)
		require.Equal(t, "echo "+phA, string(plain), tc.name)
	}
}

// A pooled upstream connection to an address the policy in force refuses
// is never written to: the request on it does not reach the origin. The
// write races with the refusal, so the scenario runs several times.
func TestPooledConnRecheckedBeforeWrite(t *testing.T) {
	t.Parallel()
	for i := range 20 {
		status, twos := pooledRefusal(t)
		require.Equal(t, http.StatusBadGateway, status, "run %d", i)
		require.Zero(t, twos, "run %d: a request reached the origin on a refused connection", i)
	}
}

// pooledRefusal pools a connection to a loopback origin, stops admitting
// loopback, and sends /two on that connection; it returns the status and
// how many /two requests the origin got.
func pooledRefusal(t *testing.T) (int, int32) {
	t.Helper()
	release := make(chan struct{})
	var twos atomic.Int32
	o := newOrigin(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/two" {
			twos.Add(1)
		}
		_, _ = io.WriteString(w, "head ")
		_ = http.NewResponseController(w).Flush()
		if r.URL.Path == "/one" {
			<-release
		}
		_, _ = io.WriteString(w, "end")
	}), false)
	res := &fakeResolver{answers: map[string][][]netip.Addr{"api.test": {addrs("127.0.0.1")}}}
	cfg := limited([]string{"api.test", "127.0.0.1"}, nil, nil)
	h := start(t, Options{Resolve: res.resolve}, &cfg)
	c := h.client(nil)
	url := "http://api.test:" + o.port()
	resp, err := c.Get(url + "/one")
	require.NoError(t, err)
	// While /one's connection is busy (so no CloseIdleConnections reaches
	// it), the floor stops admitting loopback; the host stays allowed.
	cfg.Networking.AllowedHosts = anyPort("api.test")
	require.NoError(t, h.p.SetConfig(cfg))
	// SetConfig's CloseIdleConnections would also close /one's connection
	// when it turns idle, until the transport next looks for one: this
	// request does (and its own dial is refused by the floor).
	status, _ := get(t, c, url+"/probe", nil)
	require.Equal(t, http.StatusForbidden, status)
	close(release)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, "head end", string(body))
	require.Equal(t, int32(1), o.conns.Load())
	// /one's upstream connection is back in the pool now.
	status, _ = get(t, c, url+"/two", nil)
	require.Equal(t, int32(1), o.conns.Load(), "/two was sent on the pooled connection")
	return status, twos.Load()
}

// awaitSubsts waits (bounded) until n body substitutions hold a slot.
func awaitSubsts(t *testing.T, p *Proxy, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return len(p.substs) == n }, testWait, 5*time.Millisecond, "want %d substitutions", n)
}

func TestBodySubstitutionsBounded(t *testing.T) {
	t.Parallel()
	var seen atomic.Pointer[string]
	o := newOrigin(t, echo(&seen), false)
	res := &fakeResolver{answers: map[string][][]netip.Addr{"api.test": {addrs("127.0.0.1")}}}
	cfg := limited([]string{"api.test", "127.0.0.1"}, []string{"api.test"}, nil)
	h := start(t, Options{Resolve: res.resolve}, &cfg)
	authority := "api.test:" + o.port()
	// Each of these sends a tenth of its announced body, then stalls in
	// substitution.
	stalled := make([]net.Conn, maxSubstitutions)
	for i := range stalled {
		stalled[i] = dialProxy(t, h.addr)
		_, err := io.WriteString(stalled[i], "POST http://"+authority+"/ HTTP/1.1\r\nHost: "+authority+"\r\nContent-Length: 100\r\n\r\nk="+phA[:8])
		require.NoError(t, err)
	}
	awaitSubsts(t, h.p, maxSubstitutions)
	post := func() (int, string) {
		req, err := http.NewRequest(http.MethodPost, "http://"+authority+"/", strings.NewReader("k="+phA))
		require.NoError(t, err)
		resp, err := h.client(nil).Do(req)
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	status, body := post()
	require.Equal(t, http.StatusTooManyRequests, status)
	require.Equal(t, fixedBody(reasonSubstBusy), body)
	require.Nil(t, seen.Load(), "a refused request never reaches the origin")
	// One stalled client gives up: its slot is free again.
	require.NoError(t, stalled[0].Close())
	awaitSubsts(t, h.p, maxSubstitutions-1)
	status, body = post()
	require.Equal(t, http.StatusOK, status, body)
	require.Contains(t, *seen.Load(), "body=k="+secretA+"\n")
	// Sent bodies give their slots back.
	awaitSubsts(t, h.p, maxSubstitutions-1)
	for _, c := range stalled[1:] {
		require.NoError(t, c.Close())
	}
	awaitSubsts(t, h.p, 0)
}
