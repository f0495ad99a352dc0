package agentwire

import (
	"strings"
	"time"
)

// Procs: commands the agent owns past the call that started them
// (core/sandbox's ProcStart). Each route taking an id has it as the path's
// {id} segment (ProcPath fills it in); an unknown id is Error code
// proc_not_found (404), a malformed one invalid_argument (400).
const (
	// PathProcs: POST a ProcStart, answers the ProcInfo (201), or Error
	// code too_many_procs (429) with sandbox.MaxRunningProcs running; GET
	// answers []ProcInfo, running and exited not yet removed, oldest first.
	PathProcs = "/v1/procs"
	// PathProc: GET answers the ProcInfo; DELETE SIGKILLs the proc's group
	// if it runs, waits for its leader and frees its rings (204).
	PathProc = "/v1/procs/{id}"
	// PathProcOutput: GET ?stream=&from=&follow=1 answers NDJSON
	// ProcChunks from the rings (both streams interleaved without stream),
	// each from offset from (of each stream; a from the ring no longer
	// holds starts at its oldest byte, the first chunk saying Dropped),
	// then a last line with EOF and Exit. Without follow it answers what
	// the rings hold now; with follow it streams until the proc has exited
	// and its output is drained (a straggler holding a stream is waited for
	// a bounded time), or until the proc is removed.
	PathProcOutput = "/v1/procs/{id}/output"
	// PathProcStdin: POST streams the body into the proc's stdin as it
	// arrives (any length; the pipe's back-pressure holds the sender);
	// ?close=1 closes stdin after the body (on a PTY: sends the terminal's
	// EOF character, ^D). 204, or Error code stdin_closed (409).
	PathProcStdin = "/v1/procs/{id}/stdin"
	// PathProcSignal: POST ?sig=NAME (sandbox.ProcSignals) signals the
	// proc's whole group (204), or Error code proc_exited (409).
	PathProcSignal = "/v1/procs/{id}/signal"
	// PathProcResize: POST ?cols=&rows= resizes a PTY proc's terminal (each
	// 1..sandbox.MaxTermSize; a proc without a PTY is invalid_argument).
	PathProcResize = "/v1/procs/{id}/resize"
	// PathProcWait: GET blocks until the proc's leader has exited and its
	// output is drained (as a follow ends), answers its ProcInfo: a read
	// after it finds all the proc wrote.
	PathProcWait = "/v1/procs/{id}/wait"
)

// The proc routes' Error codes (errors.go maps them to core/sandbox's
// sentinels).
const (
	CodeProcNotFound = "proc_not_found"
	CodeTooManyProcs = "too_many_procs"
	CodeProcExited   = "proc_exited"
	CodeStdinClosed  = "stdin_closed"
)

// Query parameter names of the proc routes.
const (
	QueryStream = "stream"
	QueryFrom   = "from"
	QueryFollow = "follow"
	QueryClose  = "close"
	QuerySignal = "sig"
	QueryCols   = "cols"
	QueryRows   = "rows"
)

// ProcPath is route with its {id} segment filled in.
func ProcPath(route, id string) string { return strings.Replace(route, "{id}", id, 1) }

// ProcStart is PathProcs' POST body: core/sandbox's ProcStart on the wire.
type ProcStart struct {
	Command   string `json:"command"`
	Workdir   string `json:"workdir,omitempty"`
	TTY       bool   `json:"tty,omitempty"`
	Cols      int    `json:"cols,omitempty"`
	Rows      int    `json:"rows,omitempty"`
	RingBytes int64  `json:"ring_bytes,omitempty"`
	Tag       string `json:"tag,omitempty"`
}

// ProcInfo describes a proc: core/sandbox's ProcInfo on the wire.
type ProcInfo struct {
	// ID is the agent's: short, random, of [a-z0-9].
	ID      string `json:"id"`
	Pid     int    `json:"pid"`
	TTY     bool   `json:"tty"`
	Tag     string `json:"tag,omitempty"`
	Command string `json:"command"`
	// State is "running" or "exited".
	State string `json:"state"`
	// ExitCode is the exit status, or 128+N for a death by signal N.
	ExitCode  int        `json:"exit_code"`
	Signaled  bool       `json:"signaled,omitempty"`
	StartedAt time.Time  `json:"started_at"`
	EndedAt   *time.Time `json:"ended_at,omitempty"`
	// StdoutBytes and StderrBytes are what each stream produced in all.
	StdoutBytes int64 `json:"stdout_bytes"`
	StderrBytes int64 `json:"stderr_bytes"`
}

// ProcChunk is one line of PathProcOutput's answer: a piece of output, or
// the last line (EOF with Exit).
type ProcChunk struct {
	Stream string `json:"stream,omitempty"`
	Offset int64  `json:"offset,omitempty"`
	Data   []byte `json:"data,omitempty"`
	// Dropped is how many bytes before Offset the ring no longer held.
	Dropped int64 `json:"dropped,omitempty"`
	// EOF marks the last line; Exit is then the proc as the answer ended
	// (State "running" when an answer without follow ends before the exit).
	EOF  bool      `json:"eof,omitempty"`
	Exit *ProcInfo `json:"exit,omitempty"`
}
