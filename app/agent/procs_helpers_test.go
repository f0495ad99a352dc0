package agent_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/app/agent"
	"github.com/sandgate/sandgate/core/agentwire"
)

// newProcServer is newServer whose procs are all removed when the test
// ends (before the server closes), so none outlives it.
func newProcServer(t *testing.T) string {
	t.Helper()
	return serveProcs(t, agent.New(agent.Options{}))
}

// serveProcs serves h, removing every proc when the test ends.
func serveProcs(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	base := srv.URL
	t.Cleanup(func() {
		for _, p := range listProcs(t, base) {
			resp := do(t, http.MethodDelete, base, agentwire.ProcPath(agentwire.PathProc, p.ID), nil, nil)
			_ = resp.Body.Close()
		}
	})
	return base
}

// startProc starts req and requires a 201 and a running ProcInfo.
func startProc(t *testing.T, base string, req agentwire.ProcStart) agentwire.ProcInfo {
	t.Helper()
	resp := postProc(t, base, req)
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusCreated, resp.StatusCode, string(body))
	var info agentwire.ProcInfo
	require.NoError(t, json.Unmarshal(body, &info))
	require.Regexp(t, `^[a-z0-9]+$`, info.ID)
	require.Positive(t, info.Pid)
	return info
}

func postProc(t *testing.T, base string, req agentwire.ProcStart) *http.Response {
	t.Helper()
	body, err := json.Marshal(req)
	require.NoError(t, err)
	return do(t, http.MethodPost, base, agentwire.PathProcs, nil, bytes.NewReader(body))
}

func listProcs(t *testing.T, base string) []agentwire.ProcInfo {
	t.Helper()
	var infos []agentwire.ProcInfo
	getJSON(t, base, agentwire.PathProcs, &infos)
	return infos
}

func getJSON(t *testing.T, base, route string, out any) {
	t.Helper()
	resp := do(t, http.MethodGet, base, route, nil, nil)
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(out))
}

// procRoute is route of the proc id.
func procRoute(route, id string) string { return agentwire.ProcPath(route, id) }

// waitProc waits for the proc's exit.
func waitProc(t *testing.T, base, id string) agentwire.ProcInfo {
	t.Helper()
	var info agentwire.ProcInfo
	getJSON(t, base, procRoute(agentwire.PathProcWait, id), &info)
	require.Equal(t, "exited", info.State)
	require.NotNil(t, info.EndedAt)
	return info
}

// procDo sends method to the proc's route with query kv (name, value…).
func procDo(t *testing.T, method, base, route, id string, body io.Reader, kv ...string) *http.Response {
	t.Helper()
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		q.Set(kv[i], kv[i+1])
	}
	return do(t, method, base, procRoute(route, id), q, body)
}

// sendStdin posts data to the proc's stdin (closing it after with close).
func sendStdin(t *testing.T, base, id, data string, closeAfter bool) {
	t.Helper()
	var kv []string
	if closeAfter {
		kv = []string{agentwire.QueryClose, "1"}
	}
	requireNoContent(t, procDo(t, http.MethodPost, base, agentwire.PathProcStdin, id, strings.NewReader(data), kv...))
}

// output is a PathProcOutput answer, decoded.
type output struct {
	chunks []agentwire.ProcChunk // without the last line
	last   agentwire.ProcChunk
}

// text is the data of the chunks of stream, concatenated.
func (o output) text(stream string) string {
	var b strings.Builder
	for _, c := range o.chunks {
		if c.Stream == stream {
			b.Write(c.Data)
		}
	}
	return b.String()
}

// readOutput reads the proc's output with query kv to its last line.
func readOutput(t *testing.T, base, id string, kv ...string) output {
	t.Helper()
	resp := procDo(t, http.MethodGet, base, agentwire.PathProcOutput, id, nil, kv...)
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	return decodeOutput(t, resp.Body, nil)
}

// decodeOutput decodes chunks until the last line, handing each to seen.
func decodeOutput(t *testing.T, r io.Reader, seen func(agentwire.ProcChunk)) output {
	t.Helper()
	o, err := scanOutput(r, seen)
	require.NoError(t, err)
	return o
}

// scanOutput is decodeOutput for a goroutine of a test: it asserts nothing.
func scanOutput(r io.Reader, seen func(agentwire.ProcChunk)) (output, error) {
	var o output
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var c agentwire.ProcChunk
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			return o, err
		}
		switch {
		case o.last.EOF:
			return o, fmt.Errorf("a line after the last: %s", sc.Text())
		case c.EOF && c.Exit == nil:
			return o, fmt.Errorf("a last line without the proc: %s", sc.Text())
		case c.EOF:
			o.last = c
			continue
		case len(c.Data) == 0:
			return o, fmt.Errorf("a chunk without data: %s", sc.Text())
		}
		o.chunks = append(o.chunks, c)
		if seen != nil {
			seen(c)
		}
	}
	if err := sc.Err(); err != nil {
		return o, err
	}
	if !o.last.EOF {
		return o, errors.New("the answer ended without its last line")
	}
	return o, nil
}

// openOutput starts a PathProcOutput request under ctx and returns its
// open answer.
func openOutput(t *testing.T, ctx context.Context, base, id string, kv ...string) *http.Response {
	t.Helper()
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		q.Set(kv[i], kv[i+1])
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+procRoute(agentwire.PathProcOutput, id)+"?"+q.Encode(), nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	return resp
}
