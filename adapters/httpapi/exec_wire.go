package httpapi

import (
	"encoding/base64"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/sandgate/sandgate/core/sandbox"
)

// ExecResponse is the wire form of sandbox.ExecResult (the body of POST
// /v1/sessions/{id}/exec, and `executor exec --json`).
//
// A command's output is bytes, and JSON strings are text: encoding/json
// would turn every byte that is not UTF-8 into U+FFFD, silently. So when an
// output is not valid UTF-8, its exact bytes travel base64-encoded in
// stdout_base64 / stderr_base64, beside a stdout / stderr in which each run
// of invalid bytes is one U+FFFD (for a reader who only displays it). Present only
// then: when absent, stdout / stderr are the exact bytes.
type ExecResponse struct {
	Stdout       string `json:"stdout"`
	Stderr       string `json:"stderr"`
	StdoutBase64 string `json:"stdout_base64,omitempty"`
	StderrBase64 string `json:"stderr_base64,omitempty"`
	ExitCode     int    `json:"exit_code"`
	TimedOut     bool   `json:"timed_out"`
	Truncated    bool   `json:"truncated"`
}

// NewExecResponse is the wire form of res.
func NewExecResponse(res sandbox.ExecResult) ExecResponse {
	out := ExecResponse{ExitCode: res.ExitCode, TimedOut: res.TimedOut, Truncated: res.Truncated}
	out.Stdout, out.StdoutBase64 = encodeOutput(res.Stdout)
	out.Stderr, out.StderrBase64 = encodeOutput(res.Stderr)
	return out
}

// Result is the sandbox.ExecResult r carries, with the exact bytes.
func (r ExecResponse) Result() (sandbox.ExecResult, error) {
	res := sandbox.ExecResult{ExitCode: r.ExitCode, TimedOut: r.TimedOut, Truncated: r.Truncated}
	var err error
	if res.Stdout, err = decodeOutput(r.Stdout, r.StdoutBase64); err != nil {
		return sandbox.ExecResult{}, fmt.Errorf("stdout_base64: %w", err)
	}
	if res.Stderr, err = decodeOutput(r.Stderr, r.StderrBase64); err != nil {
		return sandbox.ExecResult{}, fmt.Errorf("stderr_base64: %w", err)
	}
	return res, nil
}

func encodeOutput(s string) (text, b64 string) {
	if utf8.ValidString(s) {
		return s, ""
	}
	return strings.ToValidUTF8(s, "\uFFFD"), base64.StdEncoding.EncodeToString([]byte(s))
}

func decodeOutput(text, b64 string) (string, error) {
	if b64 == "" {
		return text, nil
	}
	b, err := base64.StdEncoding.DecodeString(b64)
	return string(b), err
}
