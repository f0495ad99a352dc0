package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
)

// errBadStream: an exec:stream answer that breaks the protocol.
var errBadStream = errors.New("POST exec:stream: malformed answer")

// execStream is POST /v1/sessions/{id}/exec:stream: each piece goes to
// sink as its line arrives, and the result is assembled from the pieces
// (checked against the lengths the server reports), so the memory it holds
// is the result's, as a plain Exec's. Cancelling ctx ends the request, which
// kills the command.
func (c *Client) execStream(ctx context.Context, sid domain.ID, in execRequest, sink sandbox.OutputSink) (sandbox.ExecResult, error) {
	body, err := json.Marshal(in)
	if err != nil {
		return sandbox.ExecResult{}, err
	}
	resp, err := c.call(ctx, http.MethodPost, sessionPath(sid, "/exec:stream"), nil, bytes.NewReader(body), int64(len(body)), "application/json")
	if err != nil {
		return sandbox.ExecResult{}, err
	}
	defer func() { _ = resp.Body.Close() }()
	out := map[string]*bytes.Buffer{string(sandbox.Stdout): {}, string(sandbox.Stderr): {}}
	// A line is at most one piece: the agent's and the engines' reads are
	// far below this, and base64 adds a third.
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 8<<20)
	for sc.Scan() {
		var ev ExecStreamEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return sandbox.ExecResult{}, fmt.Errorf("%w: %w", errBadStream, err)
		}
		switch {
		case ev.Output != nil:
			if err := deliver(ev.Output, out, sink); err != nil {
				return sandbox.ExecResult{}, err
			}
		case ev.Error != nil:
			return sandbox.ExecResult{}, &APIError{Status: codeStatus(ev.Error.Code), Code: ev.Error.Code, Message: ev.Error.Message}
		case ev.Result != nil:
			return streamResult(ev.Result, out)
		}
	}
	if err := sc.Err(); err != nil {
		return sandbox.ExecResult{}, fmt.Errorf("POST exec:stream: %w", err)
	}
	return sandbox.ExecResult{}, fmt.Errorf("%w: it ended without a result: %w", errBadStream, io.ErrUnexpectedEOF)
}

// deliver checks a piece's place in its stream, keeps it and hands it on.
func deliver(ch *ExecChunk, out map[string]*bytes.Buffer, sink sandbox.OutputSink) error {
	buf, ok := out[ch.Stream]
	if !ok {
		return fmt.Errorf("%w: unknown stream %q", errBadStream, ch.Stream)
	}
	data, err := ch.Bytes()
	if err != nil {
		return fmt.Errorf("%w: %s data_base64: %w", errBadStream, ch.Stream, err)
	}
	if ch.Offset != int64(buf.Len()) || buf.Len()+len(data) > sandbox.MaxOutputBytes {
		return fmt.Errorf("%w: %s piece at offset %d after %d bytes", errBadStream, ch.Stream, ch.Offset, buf.Len())
	}
	buf.Write(data)
	sink.Output(sandbox.Stream(ch.Stream), ch.Offset, data)
	return nil
}

func streamResult(r *ExecStreamResult, out map[string]*bytes.Buffer) (sandbox.ExecResult, error) {
	stdout, stderr := out[string(sandbox.Stdout)], out[string(sandbox.Stderr)]
	if int64(stdout.Len()) != r.StdoutBytes || int64(stderr.Len()) != r.StderrBytes {
		return sandbox.ExecResult{}, fmt.Errorf("%w: %d+%d bytes arrived, the result says %d+%d",
			errBadStream, stdout.Len(), stderr.Len(), r.StdoutBytes, r.StderrBytes)
	}
	return sandbox.ExecResult{Stdout: stdout.String(), Stderr: stderr.String(), ExitCode: r.ExitCode,
		TimedOut: r.TimedOut, Truncated: r.Truncated}, nil
}

// codeStatus is the status an error code is answered with when it is not
// in the stream (500 for a code this client does not know).
func codeStatus(code string) int {
	for _, e := range apiErrors {
		if e.code == code {
			return e.status
		}
	}
	return http.StatusInternalServerError
}

// isNoSuchEndpoint: the server has no such route (an older executor),
// which is not an unknown session.
func isNoSuchEndpoint(err error) bool {
	var apiErr *APIError
	return errors.As(err, &apiErr) && apiErr.Status == http.StatusNotFound && apiErr.Message == msgNoSuchEndpoint
}
