package cli

import (
	"bytes"
	"context"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestMCPUsageErrors(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	for name, c := range map[string]struct {
		args []string
		want string
	}{
		"http without token": {[]string{"mcp", "--http", "127.0.0.1:0"}, "--http needs $SANDGATE_MCP_TOKEN"},
		"secret on stdin":    {[]string{"mcp", "--credential", "id=a,name=A,secret-stdin,hosts=h"}, "not stdin"},
		"zero output":        {[]string{"mcp", "--max-output", "0"}, "must be positive"},
		"positional":         {[]string{"mcp", "extra"}, "got 1"},
	} {
		r := h.run(c.args...)
		require.Equal(t, ExitUsage, r.code, name)
		require.Contains(t, r.stderr, c.want, name)
	}
}

// Over stdio the server answers a client's initialize on stdout and ends
// when stdin does (the e2e test drives whole sessions). Stdin ends only
// once the answer is out, as a client's does: a server whose input ends
// may drop a request still in flight.
func TestMCPStdio(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	in, stdin := io.Pipe()
	out := &answerWatch{answered: make(chan struct{})}
	go func() {
		_, _ = io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}
`)
		select {
		case <-out.answered:
		case <-time.After(10 * time.Second):
		}
		_ = stdin.Close()
	}()
	var errOut bytes.Buffer
	code := Run(context.Background(), []string{"mcp"}, Streams{Stdin: in, Stdout: out, Stderr: &errOut,
		Getenv: func(k string) string { return h.env[k] }})
	require.Equal(t, ExitOK, code, errOut.String())
	require.Contains(t, out.String(), `"serverInfo":{"name":"sandgate"`)
	require.Contains(t, out.String(), "create_sandbox", "the instructions name the first tool")
}

// answerWatch is stdout that closes answered once a line has come out.
type answerWatch struct {
	mu       sync.Mutex
	buf      bytes.Buffer
	answered chan struct{}
	once     sync.Once
}

func (w *answerWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.buf.Write(p)
	if bytes.Contains(w.buf.Bytes(), []byte("\n")) {
		w.once.Do(func() { close(w.answered) })
	}
	return n, err
}

func (w *answerWatch) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}
