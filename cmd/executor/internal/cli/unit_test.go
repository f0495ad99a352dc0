package cli

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/adapters/httpapi"
	"github.com/sandgate/sandgate/core/domain"
)

func TestExplainCodesTheClientCannotProvoke(t *testing.T) {
	t.Parallel()
	c := call{url: "http://h:1", sid: domain.MustParseSessionID("s1"), path: "/p"}
	for _, tc := range []struct {
		ae   httpapi.APIError
		want string
	}{
		{httpapi.APIError{Status: http.StatusMethodNotAllowed, Code: httpapi.CodeMethodNotAllowed, Message: "method not allowed"},
			"the server at http://h:1 does not speak this version of the executor API (method not allowed)"},
		{httpapi.APIError{Status: http.StatusTeapot, Code: "brewing", Message: "short and stout"},
			"the executor answered HTTP 418 brewing: short and stout"},
		{httpapi.APIError{Status: http.StatusRequestEntityTooLarge, Code: httpapi.CodeFileTooLarge, Message: "over 500 MiB"},
			"/p is larger than the executor's transfer limit: over 500 MiB"},
	} {
		require.EqualError(t, c.explain(&tc.ae), tc.want)
	}
}

func TestSpoolRefusesMoreThanTheLimit(t *testing.T) {
	t.Parallel()
	_, _, _, err := spool(strings.NewReader("0123456789x"), 10)
	require.ErrorIs(t, err, errTooLarge)
	r, n, cleanup, err := spool(strings.NewReader("0123456789"), 10)
	require.NoError(t, err)
	defer cleanup()
	require.Equal(t, int64(10), n)
	b := make([]byte, 11)
	m, _ := r.Read(b)
	require.Equal(t, "0123456789", string(b[:m]))
}

func TestReadSecret(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, want, err string
	}{
		{"tok\n", "tok", ""},
		{"tok\r\n", "tok", ""},
		{"tok", "tok", ""},
		{"two\nlines\n", "two\nlines", ""},
		{"", "", "stdin is empty"},
		{strings.Repeat("x", maxSecretBytes+1), "", "longer than 65536 bytes"},
	} {
		got, err := readSecret(strings.NewReader(tc.in))
		if tc.err != "" {
			require.EqualError(t, err, tc.err)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, tc.want, got.Reveal())
	}
	_, err := readSecret(nil)
	require.EqualError(t, err, "no stdin")
}

func TestCleartextBeyondLoopback(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]bool{
		"http://127.0.0.1:7070":          false,
		"http://[::1]:7070":              false,
		"http://localhost:7070":          false,
		"https://executor.internal":      false,
		"http://executor.internal":       true,
		"http://10.0.0.5:7070":           true,
		"http://127.0.0.1.example.test/": true,
	} {
		require.Equal(t, want, cleartextBeyondLoopback(raw), raw)
	}
}

func TestTokenOverCleartextWarns(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	// Every request goes to the test server whatever its URL names: nothing
	// is dialled beyond loopback.
	testHost := strings.TrimPrefix(h.url, "http://")
	h.hc = &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
		r.URL.Host = testHost
		return http.DefaultTransport.RoundTrip(r)
	})}
	r := h.run("ls", "--url", "http://executor.internal")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "executor: warning: sending the API token unencrypted to http://executor.internal; use https beyond loopback\n", r.stderr)
	r = h.run("ls", "--url", "http://me:hunter2@executor.internal")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "executor: warning: sending the API token unencrypted to http://me:xxxxx@executor.internal; use https beyond loopback\n", r.stderr)
	r = h.run("ls")
	require.Equal(t, 0, r.code, r.stderr)
	require.Empty(t, r.stderr, "loopback needs no warning")
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
