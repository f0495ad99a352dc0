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
// command line is one of the agent's (the arguments, NUL-separated as in
// /proc). The agent is non-dumpable, which closes its fds and memory to
// the sandbox, but /proc/<pid>/status and cmdline stay readable.
const agentRSSScript = `for d in /proc/[0-9]*; do
	c="$(tr '\0' ' ' <"$d/cmdline" 2>/dev/null)"
	for want; do
		if [ "$c" = "$want" ]; then grep -E '^(VmRSS|VmHWM):' "$d/status" 2>/dev/null; fi
	done
done
true`

// agentCmdlines are the agent's processes: a relay and its daemon (the
// agent with a key, as the executor runs it), or a stream served alone.
var agentCmdlines = []string{
	strings.Join(agentwire.RelayArgv(), " ") + " ",
	agentwire.Binary + " daemon ",
	strings.Join(agentwire.Argv(), " ") + " ",
}

// agentRSS reads the memory of the agent in sandbox id with one engine
// exec (not over the agent, which would measure itself at work): the sum
// of its processes (relay and daemon).
func (e *env) agentRSS(ctx context.Context, id string) (agentMem, error) {
	cmdline := strings.Join(agentCmdlines, " | ")
	var out bytes.Buffer
	if err := e.rawRun(ctx, id, &out, append([]string{"bash", "-c", agentRSSScript, "rss"}, agentCmdlines...)...); err != nil {
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
			m.rss += n
		} else {
			m.hwm += n
		}
	}
	if !found {
		return agentMem{}, fmt.Errorf("no agent process (%q) in sandbox %.12s", cmdline, id)
	}
	return m, nil
}
