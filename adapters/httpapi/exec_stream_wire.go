package httpapi

import "github.com/sandgate/sandgate/core/sandbox"

// ExecStreamEvent is one line of POST /v1/sessions/{id}/exec:stream's
// NDJSON answer (application/x-ndjson): exactly one field is set. Output
// lines come as the command writes, each stream's in order; the last line
// is Result or Error; KeepAlive lines (every KeepAliveInterval while the
// command is silent) carry nothing and keep proxies from closing an idle
// answer.
type ExecStreamEvent struct {
	Output    *ExecChunk        `json:"output,omitempty"`
	Result    *ExecStreamResult `json:"result,omitempty"`
	Error     *ErrorDetail      `json:"error,omitempty"`
	KeepAlive bool              `json:"keepalive,omitempty"`
}

// ExecChunk is a piece of one stream at its byte offset in that stream:
// the pieces of a stream concatenate to exactly what POST …/exec would have
// answered (the first MaxOutputBytes). Text is the piece as UTF-8; when the
// piece is not valid UTF-8 (binary output, or a character cut between two
// pieces), its exact bytes are in DataBase64 and Text has U+FFFD in their
// place, as ExecResponse does.
type ExecChunk struct {
	Stream     string `json:"stream"`
	Offset     int64  `json:"offset"`
	Text       string `json:"text"`
	DataBase64 string `json:"data_base64,omitempty"`
}

// Bytes is the piece's exact bytes.
func (c ExecChunk) Bytes() ([]byte, error) {
	s, err := decodeOutput(c.Text, c.DataBase64)
	return []byte(s), err
}

// ExecStreamResult is how the command ended, as ExecResponse says it,
// without the output (the chunks carried it) but with each stream's length.
type ExecStreamResult struct {
	ExitCode    int   `json:"exit_code"`
	TimedOut    bool  `json:"timed_out"`
	Truncated   bool  `json:"truncated"`
	StdoutBytes int64 `json:"stdout_bytes"`
	StderrBytes int64 `json:"stderr_bytes"`
}

// ErrorDetail is the API's error, as errorBody carries it.
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func newExecChunk(stream sandbox.Stream, offset int64, data []byte) *ExecChunk {
	c := &ExecChunk{Stream: string(stream), Offset: offset}
	c.Text, c.DataBase64 = encodeOutput(string(data))
	return c
}

func newExecStreamResult(res sandbox.ExecResult) *ExecStreamResult {
	return &ExecStreamResult{ExitCode: res.ExitCode, TimedOut: res.TimedOut, Truncated: res.Truncated,
		StdoutBytes: int64(len(res.Stdout)), StderrBytes: int64(len(res.Stderr))}
}
