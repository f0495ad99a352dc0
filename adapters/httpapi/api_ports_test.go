package httpapi

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/core/session"
)

var portSID = domain.MustParseSessionID("ses_a")

// upperLines serves a connection inside the fake sandbox: each line comes
// back upper-cased; it ends when the connection does.
func upperLines(c net.Conn) {
	sc := bufio.NewScanner(c)
	for sc.Scan() {
		if _, err := io.WriteString(c, strings.ToUpper(sc.Text())+"\n"); err != nil {
			return
		}
	}
}

// pipeDial makes the fake service's ports answer with serve on an
// in-memory connection; ended receives once per connection served.
func pipeDial(serve func(net.Conn)) (func(int) (net.Conn, error), chan struct{}) {
	ended := make(chan struct{}, 128)
	return func(int) (net.Conn, error) {
		client, server := net.Pipe()
		go func() {
			defer func() { ended <- struct{}{} }()
			defer func() { _ = server.Close() }()
			serve(server)
		}()
		return client, nil
	}, ended
}

func TestPortForwardCarriesBytesAndEndsWithTheClient(t *testing.T) {
	t.Parallel()
	e := newAPI(t, APIOptions{Token: apiToken})
	dial, ended := pipeDial(upperLines)
	e.svc.Dial = dial
	conn, err := e.client.PortForward(context.Background(), portSID, 8080)
	require.NoError(t, err)
	_, err = io.WriteString(conn, "hello\n")
	require.NoError(t, err)
	line, err := bufio.NewReader(conn).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "HELLO\n", line)
	require.NoError(t, conn.Close())
	select {
	case <-ended: // the sandbox side saw the client go
	case <-time.After(5 * time.Second):
		t.Fatal("the sandbox's connection outlived the client's")
	}
	require.Contains(t, e.svc.Calls(), "dial ses_a 8080")
}

func TestPortForwardErrors(t *testing.T) {
	t.Parallel()
	e := newAPI(t, APIOptions{Token: apiToken})
	_, err := e.client.PortForward(context.Background(), portSID, 8080)
	require.ErrorIs(t, err, sandbox.ErrPortClosed)
	_, err = e.client.PortForward(context.Background(), portSID, 0)
	require.ErrorIs(t, err, session.ErrInvalidRequest)
	e.svc.Err = sandbox.ErrNoAgent
	_, err = e.client.PortForward(context.Background(), portSID, 8080)
	require.ErrorIs(t, err, sandbox.ErrNoAgent)

	anon, err := NewClient(e.srv.URL, "", e.srv.Client())
	require.NoError(t, err)
	_, err = anon.PortForward(context.Background(), portSID, 8080)
	require.ErrorIs(t, err, ErrUnauthorized)

	for _, p := range []string{"/ports/x:connect", "/ports/8080:nope", "/ports/70000:connect"} {
		a := e.do(t, http.MethodGet, "/v1/sessions/ses_a"+p, nil, nil)
		require.Equal(t, http.StatusBadRequest, a.status, p)
		require.Equal(t, CodeInvalidArgument, a.code, p)
	}
}

func TestPortForwardCapsConnectionsPerSession(t *testing.T) {
	t.Parallel()
	e := newAPI(t, APIOptions{Token: apiToken, MaxStreams: 2})
	e.svc.Dial, _ = pipeDial(upperLines)
	ctx := context.Background()
	var open []net.Conn
	for range 2 {
		c, err := e.client.PortForward(ctx, portSID, 8080)
		require.NoError(t, err)
		open = append(open, c)
	}
	_, err := e.client.PortForward(ctx, portSID, 8080)
	require.ErrorIs(t, err, ErrTooManyStreams)
	var api *APIError
	require.ErrorAs(t, err, &api)
	require.Equal(t, http.StatusTooManyRequests, api.Status)
	other, err := e.client.PortForward(ctx, domain.MustParseSessionID("ses_b"), 8080)
	require.NoError(t, err, "the cap is per session")
	require.NoError(t, other.Close())

	require.NoError(t, open[0].Close())
	require.Eventually(t, func() bool {
		c, err := e.client.PortForward(ctx, portSID, 8080)
		if err != nil {
			return false
		}
		open[0] = c
		return true
	}, 5*time.Second, 20*time.Millisecond, "a closed connection gives its slot back")
	for _, c := range open {
		require.NoError(t, c.Close())
	}
}

func TestPortForwardIdleTimeout(t *testing.T) {
	t.Parallel()
	e := newAPI(t, APIOptions{Token: apiToken, PortIdleTimeout: 200 * time.Millisecond})
	dial, ended := pipeDial(upperLines)
	e.svc.Dial = dial
	conn, err := e.client.PortForward(context.Background(), portSID, 8080)
	require.NoError(t, err)
	defer func() { _ = conn.Close() }()
	// Traffic keeps it open past the timeout…
	br := bufio.NewReader(conn)
	for range 4 {
		time.Sleep(100 * time.Millisecond)
		_, err = io.WriteString(conn, "tick\n")
		require.NoError(t, err)
		_, err = br.ReadString('\n')
		require.NoError(t, err)
	}
	// …silence closes it.
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
	_, err = br.ReadString('\n')
	require.ErrorIs(t, err, io.EOF)
	<-ended
}

// backend is an HTTP server "inside the sandbox": it answers the path,
// query, Authorization and Cookie it saw, and echoes WebSocket messages
// on /ws.
func backend(t *testing.T) func(int) (net.Conn, error) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ws" {
			ws, err := websocket.Accept(w, r, nil)
			if err != nil {
				return
			}
			defer func() { _ = ws.CloseNow() }()
			typ, msg, err := ws.Read(r.Context())
			if err == nil {
				_ = ws.Write(r.Context(), typ, append([]byte("echo:"), msg...))
			}
			_ = ws.Close(websocket.StatusNormalClosure, "")
			return
		}
		_, _ = io.WriteString(w, r.URL.Path+"?"+r.URL.RawQuery+"|"+r.Header.Get("Authorization")+"|"+r.Header.Get("Cookie"))
	}))
	t.Cleanup(srv.Close)
	return func(int) (net.Conn, error) { return net.Dial("tcp", srv.Listener.Addr().String()) }
}

func TestPreviewProxiesWithTheToken(t *testing.T) {
	t.Parallel()
	e := newAPI(t, APIOptions{Token: apiToken})
	e.svc.Dial = backend(t)
	a := e.do(t, http.MethodGet, "/v1/sessions/ses_a/ports/3000/app/page?x=1", nil, http.Header{"Cookie": {"theme=dark"}})
	require.Equal(t, http.StatusOK, a.status)
	require.Equal(t, "/app/page?x=1||theme=dark", string(a.body), "the prefix stripped, the API token kept out")

	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, e.srv.URL+"/v1/sessions/ses_a/ports/3000?x=1", nil)
	require.NoError(t, err)
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusPermanentRedirect, resp.StatusCode)
	require.Equal(t, "/v1/sessions/ses_a/ports/3000/?x=1", resp.Header.Get("Location"), "the bare address goes to the preview's root")

	a = e.do(t, http.MethodGet, "/v1/sessions/ses_a/ports/3000/", nil, http.Header{"Authorization": {"Bearer wrong"}})
	require.Equal(t, http.StatusUnauthorized, a.status)
	require.Equal(t, CodeUnauthorized, a.code)

	e.svc.Dial = nil
	a = e.do(t, http.MethodGet, "/v1/sessions/ses_a/ports/3000/", nil, nil)
	require.Equal(t, http.StatusBadGateway, a.status)
	require.Equal(t, CodePortClosed, a.code)
}

func TestPreviewPassesWebSocketsThrough(t *testing.T) {
	t.Parallel()
	e := newAPI(t, APIOptions{Token: apiToken})
	e.svc.Dial = backend(t)
	ctx := context.Background()
	ws, _, err := websocket.Dial(ctx, e.srv.URL+"/v1/sessions/ses_a/ports/3000/ws",
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + apiToken}}})
	require.NoError(t, err)
	defer func() { _ = ws.CloseNow() }()
	require.NoError(t, ws.Write(ctx, websocket.MessageText, []byte("hi")))
	_, msg, err := ws.Read(ctx)
	require.NoError(t, err)
	require.Equal(t, "echo:hi", string(msg))
}

func TestPreviewSignedURL(t *testing.T) {
	t.Parallel()
	secret := []byte("0123456789abcdef0123456789abcdef")
	e := newAPI(t, APIOptions{Token: apiToken, SecretKey: func() []byte { return secret }})
	e.svc.Dial = backend(t)
	signed, err := e.client.SignPortURL(context.Background(), portSID, 3000, 0)
	require.NoError(t, err)
	require.WithinDuration(t, time.Now().Add(DefaultSignTTL), signed.ExpiresAt, 5*time.Second)
	require.Equal(t, e.srv.URL+signed.Path, signed.URL)

	// A browser: no token, the URL, then the cookie it was given.
	resp, err := http.Get(signed.URL) //nolint:noctx // a test's one-shot request
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	require.Equal(t, "/?||", string(body), "neither the signature nor a token reaches the sandbox")
	cookies := resp.Cookies()
	require.Len(t, cookies, 1)
	require.Equal(t, "/v1/sessions/ses_a/ports/3000/", cookies[0].Path)
	require.True(t, cookies[0].HttpOnly)

	cookie := http.Header{"Cookie": {"theme=dark; " + sigParam + "=" + cookies[0].Value}, "Authorization": nil}
	a := e.do(t, http.MethodGet, "/v1/sessions/ses_a/ports/3000/style.css", nil, cookie)
	require.Equal(t, http.StatusOK, a.status)
	require.Equal(t, "/style.css?||theme=dark", string(a.body))

	for _, p := range []string{"/v1/sessions/ses_a/ports/3001/", "/v1/sessions/ses_b/ports/3000/"} {
		a = e.do(t, http.MethodGet, p, nil, cookie)
		require.Equal(t, http.StatusUnauthorized, a.status, "a signature opens its own session and port only: %s", p)
	}
	tampered := signed.Path[:len(signed.Path)-2] + "AA"
	if tampered == signed.Path {
		tampered = signed.Path[:len(signed.Path)-2] + "BB"
	}
	a = e.do(t, http.MethodGet, tampered, nil, http.Header{"Authorization": nil})
	require.Equal(t, http.StatusUnauthorized, a.status)
	require.Equal(t, CodeUnauthorized, a.code)

	_, err = e.client.SignPortURL(context.Background(), portSID, 3000, 25*time.Hour)
	require.ErrorIs(t, err, session.ErrInvalidRequest)
}

func TestSignWithoutKeyIsNotImplemented(t *testing.T) {
	t.Parallel()
	e := newAPI(t, APIOptions{Token: apiToken})
	_, err := e.client.SignPortURL(context.Background(), portSID, 3000, time.Minute)
	var api *APIError
	require.ErrorAs(t, err, &api)
	require.Equal(t, http.StatusNotImplemented, api.Status)
}

func TestURLSignerRefusesExpiredAndForeign(t *testing.T) {
	t.Parallel()
	s := newURLSigner([]byte("k"))
	now := time.Unix(1_800_000_000, 0)
	sig := s.sign(portSID, 3000, now.Add(time.Minute))
	require.True(t, s.valid(sig, portSID, 3000, now))
	require.False(t, s.valid(sig, portSID, 3000, now.Add(time.Minute)), "expired")
	require.False(t, s.valid(sig, portSID, 3001, now))
	require.False(t, newURLSigner([]byte("other")).valid(sig, portSID, 3000, now), "another executor's key")
	later := s.sign(portSID, 3000, now.Add(time.Hour))
	exp, mac, _ := strings.Cut(later, ".")
	_, oldMac, _ := strings.Cut(sig, ".")
	require.False(t, s.valid(exp+"."+oldMac, portSID, 3000, now), "an expiry moved under an old MAC")
	for _, bad := range []string{"", ".", "x.y", exp, exp + ".!!", "." + mac} {
		require.False(t, s.valid(bad, portSID, 3000, now), bad)
	}
}

// TestPortForwardServerEndsFirst: a server that answers and hangs up
// reaches the client whole, then as a clean EOF (the WebSocket's close
// handshake completes), and the client's Close after it is no error.
func TestPortForwardServerEndsFirst(t *testing.T) {
	t.Parallel()
	e := newAPI(t, APIOptions{Token: apiToken})
	e.svc.Dial, _ = pipeDial(func(c net.Conn) {
		_, _ = bufio.NewReader(c).ReadString('\n')
		_, _ = io.WriteString(c, "bye")
	})
	for range 10 {
		conn, err := e.client.PortForward(context.Background(), portSID, 8080)
		require.NoError(t, err)
		_, err = io.WriteString(conn, "quit\n")
		require.NoError(t, err)
		got, err := io.ReadAll(conn)
		require.NoError(t, err)
		require.Equal(t, "bye", string(got))
		require.NoError(t, conn.Close())
	}
}

// TestPreviewClientLeavingFreesItsSlot: a browser that gives up on a
// request the server inside never answers gives the session's slot (and
// the sandbox connection) back.
func TestPreviewClientLeavingFreesItsSlot(t *testing.T) {
	t.Parallel()
	e := newAPI(t, APIOptions{Token: apiToken, MaxStreams: 1})
	dial, ended := pipeDial(func(c net.Conn) { _, _ = io.Copy(io.Discard, c) }) // reads, never answers
	e.svc.Dial = dial
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.srv.URL+"/v1/sessions/ses_a/ports/3000/", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+apiToken)
	_, err = e.srv.Client().Do(req)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("the sandbox connection outlived the browser's request")
	}
	e.svc.Dial, _ = pipeDial(upperLines)
	require.Eventually(t, func() bool {
		conn, err := e.client.PortForward(context.Background(), portSID, 8080)
		if err != nil {
			return false
		}
		_ = conn.Close()
		return true
	}, 5*time.Second, 20*time.Millisecond, "the slot is free again")
}
