package agent_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/agentwire"
	"github.com/sandgate/sandgate/core/sandbox"
)

// do sends one request to route with the query q and returns the answer.
func do(t *testing.T, method, base, route string, q url.Values, body io.Reader) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, base+route+"?"+q.Encode(), body)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	return resp
}

// pathQ is the query naming p.
func pathQ(p string, kv ...string) url.Values {
	q := url.Values{agentwire.QueryPath: {p}}
	for i := 0; i+1 < len(kv); i += 2 {
		q.Set(kv[i], kv[i+1])
	}
	return q
}

// requireFault requires resp to be the Error document of code with status.
func requireFault(t *testing.T, resp *http.Response, status int, code string) agentwire.Error {
	t.Helper()
	require.Equal(t, status, resp.StatusCode)
	doc := decodeError(t, resp)
	require.Equal(t, code, doc.Code, doc.Message)
	return doc
}

// requireNoContent requires a 204.
func requireNoContent(t *testing.T, resp *http.Response) {
	t.Helper()
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusNoContent, resp.StatusCode, string(b))
}

// rawPut sends a PUT announcing length bytes but carrying only body, then
// half-closes the connection: a sender that stopped short. It returns the
// agent's answer, which the half-close still lets through.
func rawPut(t *testing.T, base, route, p string, length int, body []byte) *http.Response {
	t.Helper()
	u, err := url.Parse(base)
	require.NoError(t, err)
	conn, err := net.Dial("tcp", u.Host)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	q := url.Values{agentwire.QueryPath: {p}}
	_, err = io.WriteString(conn, "PUT "+route+"?"+q.Encode()+" HTTP/1.1\r\nHost: agent\r\nContent-Length: "+
		itoa(length)+"\r\n\r\n")
	require.NoError(t, err)
	_, err = conn.Write(body)
	require.NoError(t, err)
	require.NoError(t, conn.(*net.TCPConn).CloseWrite())
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	return resp
}

// noTemp requires that no temporary write file is left in dir.
func noTemp(t *testing.T, dirs ...string) {
	t.Helper()
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if os.IsNotExist(err) {
			continue
		}
		require.NoError(t, err)
		for _, e := range entries {
			require.False(t, strings.HasPrefix(e.Name(), sandbox.TempPrefix), "temporary file left: %s",
				filepath.Join(dir, e.Name()))
		}
	}
}

// modeOf is p's permission bits, with the special ones.
func modeOf(t *testing.T, p string) os.FileMode {
	t.Helper()
	fi, err := os.Lstat(p)
	require.NoError(t, err)
	return fi.Mode() & (os.ModePerm | os.ModeSetuid | os.ModeSetgid | os.ModeSticky)
}

// readAll returns p's content.
func readAll(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return string(b)
}

func itoa(n int) string { return strconv.Itoa(n) }
