package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/sandgate/sandgate/core/agentwire"
)

// agentMem is an agent process's resident memory, in bytes: now (VmRSS)
// and its peak (VmHWM).
type agentMem struct{ rss, hwm int64 }

// agentRSSScript prints the VmRSS and VmHWM lines of every process whose
// command line is the agent's ($1, NUL-separated as in /proc). The agent
// is non-dumpable, which closes its fds and memory to the sandbox, but
// /proc/<pid>/status and cmdline stay readable.
const agentRSSScript = `for d in /proc/[0-9]*; do
	[ "$(tr '\0' ' ' <"$d/cmdline" 2>/dev/null)" = "$1" ] || continue
	grep -E '^(VmRSS|VmHWM):' "$d/status" 2>/dev/null
done`

// agentRSS reads the memory of the agent in sandbox id with one engine
// exec (not over the agent, which would measure itself at work). With
// more than one agent (a reopened stream), the largest.
func (e *env) agentRSS(ctx context.Context, id string) (agentMem, error) {
	cmdline := strings.Join(agentwire.Argv(), " ") + " "
	var out bytes.Buffer
	if err := e.rawRun(ctx, id, &out, "bash", "-c", agentRSSScript, "rss", cmdline); err != nil {
		return agentMem{}, err
	}
	var m agentMem
	found := false
	for _, l := range strings.Split(out.String(), "\n") {
		name, v, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		n, err := parseKB(v)
		if err != nil {
			return agentMem{}, fmt.Errorf("agent rss: %q: %w", l, err)
		}
		found = true
		if name == "VmRSS" {
			m.rss = max(m.rss, n)
		} else {
			m.hwm = max(m.hwm, n)
		}
	}
	if !found {
		return agentMem{}, fmt.Errorf("no agent process (%q) in sandbox %.12s", cmdline, id)
	}
	return m, nil
}
