package proxy

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"
)

// syncBuffer is a log sink safe for the proxy's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestSpansAndLogs(t *testing.T) {
	t.Parallel()
	var seen atomic.Pointer[string]
	o := newOrigin(t, echo(&seen), false)
	res := &fakeResolver{answers: map[string][][]netip.Addr{"api.test": {addrs("127.0.0.1")}}}
	cfg := limited([]string{"api.test", "127.0.0.1"}, []string{"api.test"}, []string{"api.test"})
	var logs syncBuffer
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h := start(t, Options{Resolve: res.resolve, Logger: logger}, &cfg)
	const traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	req, err := http.NewRequest(http.MethodPost, "http://api.test:"+o.port()+"/v1?k="+phA, strings.NewReader("x="+phA))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+phA)
	req.Header.Set("Traceparent", traceparent)
	resp, err := h.client(nil).Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NoError(t, resp.Body.Close())
	require.Contains(t, *seen.Load(), "Traceparent="+traceparent+"\n", "the sandbox's own context travels unchanged")

	spans := h.spans.wait(t, 1)
	s := spans[0]
	require.Equal(t, spanName, s.Name())
	require.Equal(t, trace.SpanKindClient, s.SpanKind())
	require.False(t, s.Parent().IsValid(), "a traceparent is never the parent")
	require.Len(t, s.Links(), 1)
	require.Equal(t, "0af7651916cd43dd8448eb211c80319c", s.Links()[0].SpanContext.TraceID().String())
	require.NotEqual(t, s.Links()[0].SpanContext.TraceID(), s.SpanContext().TraceID())
	want := map[string]any{
		"http.request.method":       "POST",
		"server.address":            "api.test",
		"server.port":               int64(mustAtoi(t, o.port())),
		"http.response.status_code": int64(200),
		"sandgate.verdict":          "allowed",
		"sandgate.rule":             "opened:127.0.0.1:*",
		"sandgate.bytes_sent":       int64(len("x=" + secretA)),
		"sandgate.credential_ids":   []string{"cred-a"},
		"sandgate.session_id":       sessionID,
	}
	for k, v := range want {
		require.Equal(t, v, attr(s, k).AsInterface(), k)
	}
	require.Positive(t, attr(s, "sandgate.bytes_received").AsInt64())
	requireNoSecrets(t, spans)

	out := logs.String()
	require.Contains(t, out, `"msg":"egress_request"`)
	require.Contains(t, out, `"host":"api.test"`)
	require.NotContains(t, out, secretA)
	require.NotContains(t, out, phA, "no request content in logs, placeholders neither")
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	var n int
	for _, c := range s {
		require.True(t, c >= '0' && c <= '9')
		n = n*10 + int(c-'0')
	}
	return n
}
