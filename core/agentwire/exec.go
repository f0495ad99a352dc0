package agentwire

// ExecRequest is PathExec's body: run Command with `/bin/bash -c` in Workdir
// (empty: the agent's own working directory), stdin /dev/null, the agent's
// environment, in a process group of its own.
type ExecRequest struct {
	Command string `json:"command"`
	Workdir string `json:"workdir,omitempty"`
	// DeadlineSeconds (0: none): at the deadline the agent SIGKILLs the
	// command's whole group and marks stderr with DeadlineMark.
	DeadlineSeconds int64 `json:"deadline_seconds,omitempty"`
	// MaxOutputBytes caps what the agent sends of each stream (0: no cap);
	// the rest is read and dropped, and the exit says Truncated.
	MaxOutputBytes int64 `json:"max_output_bytes,omitempty"`
}

// ExecEvent is one line of PathExec's answer: exactly one field is set. The
// first event carries Pid, the last Exit. A command that never started
// because its Workdir cannot be entered has no Pid: its answer is the
// shell's message on Stderr and an Exit with code 126, as the fallback
// wrapper's failed cd.
type ExecEvent struct {
	// Pid is the command's pid in the sandbox, which is also its process
	// group: what a provider kills from outside when the agent is lost.
	Pid    int       `json:"pid,omitempty"`
	Stdout []byte    `json:"stdout,omitempty"`
	Stderr []byte    `json:"stderr,omitempty"`
	Exit   *ExecExit `json:"exit,omitempty"`
}

// ExecExit is how the command ended, as the agent observed it with system
// calls (wait status, its own clock, kill(2) of the group).
type ExecExit struct {
	// Code is the exit status, or 128+N for a death by signal N.
	Code int `json:"code"`
	// FinishedMillis is the agent's clock from just before the spawn to the
	// moment the command was finished: the leader's exit, or — when it died
	// of a signal under a deadline — the moment its group was first seen
	// empty (the command may have killed its leader and run on).
	FinishedMillis int64 `json:"finished_ms"`
	// Killed: the agent killed the group at the deadline.
	Killed bool `json:"killed,omitempty"`
	// Truncated: a stream exceeded MaxOutputBytes.
	Truncated bool `json:"truncated,omitempty"`
}

// DeadlineMark is the line the agent writes on the command's stderr when it
// kills the group at its deadline: a diagnostic for the model, never
// evidence (the command can print it too). The %d is the deadline in
// seconds. It is the fallback wrapper's mark, word for word.
const DeadlineMark = "sandgate: command exceeded its %d s deadline and was killed\n"
