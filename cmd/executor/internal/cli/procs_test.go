package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
)

// TestProcCommands: exec -d starts a proc and prints its id; ps lists it;
// exec -i passes stdin and ends with the proc's code; logs reads from an
// offset; kill signals and --rm forgets (over the fake's procs, which echo
// their stdin after their command).
func TestProcCommands(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := h.run("exec", "-d", "s1", "--", "sleep", "9")
	require.Zero(t, r.code, r.stderr)
	require.Equal(t, "p1\n", r.stdout)

	r = h.run("ps", "s1")
	require.Zero(t, r.code, r.stderr)
	require.Regexp(t, `(?m)^PROC +PID +STATE +EXIT +STARTED +COMMAND\np1 +101 +running +- +2023-11-14 22:13:20 +sleep 9$`, strings.TrimSpace(r.stdout))
	r = h.run("ps", "s1", "--json")
	require.Zero(t, r.code, r.stderr)
	require.Contains(t, r.stdout, `"id": "p1"`)

	h.stdin = strings.NewReader("piped\n")
	r = h.run("exec", "-i", "s1", "--", "cat")
	require.Zero(t, r.code, r.stderr)
	require.Equal(t, "cat\npiped\n", r.stdout, "the command, then stdin echoed")
	list, err := h.svc.SessionProcs(domain.MustParseSessionID("s1")).Procs(context.Background())
	require.NoError(t, err)
	require.Len(t, list, 1, "an attached proc is removed once it ended")

	r = h.run("logs", "--from", "6", "s1", "p1")
	require.Zero(t, r.code, r.stderr)
	require.Equal(t, "9\n", r.stdout)
	r = h.run("kill", "s1", "p1")
	require.Zero(t, r.code, r.stderr)
	r = h.run("logs", "-f", "s1", "p1")
	require.Zero(t, r.code, r.stderr, "a followed proc that ended ends the read")
	require.Equal(t, "sleep 9\n", r.stdout)
	r = h.run("kill", "s1", "p1")
	require.Equal(t, ExitFailure, r.code)
	require.Contains(t, r.stderr, "proc_exited")
	r = h.run("kill", "--rm", "s1", "p1")
	require.Zero(t, r.code, r.stderr)
	r = h.run("logs", "s1", "p1")
	require.Equal(t, ExitFailure, r.code)
	require.Contains(t, r.stderr, "proc_not_found")
}

// TestProcCommandUsage: bad command lines are refused before any call.
func TestProcCommandUsage(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"exec", "-d", "-i", "s1", "--", "x"}, "-d starts a background proc"},
		{[]string{"exec", "-d", "--timeout", "1s", "s1", "--", "x"}, "-d starts a background proc"},
		{[]string{"exec", "-i", "--json", "s1", "--", "x"}, "without --json"},
		{[]string{"kill", "-s", "BOOM", "s1", "p1"}, "-s BOOM: not one of"},
		{[]string{"logs", "s1"}, "want 2 argument(s) (SESSION PROC)"},
		{[]string{"ps"}, "want 1 argument(s) (SESSION)"},
		{[]string{"shell"}, "want SESSION"},
	} {
		r := h.run(tc.args...)
		require.Equal(t, ExitUsage, r.code, "%v: %s", tc.args, r.stderr)
		require.Contains(t, r.stderr, tc.want, tc.args)
	}
	require.Empty(t, h.svc.Calls())
}

// TestShellWithoutTerminal: shell with stdin not a terminal runs its
// command on a PTY all the same and keeps its exit code (the fake ends a
// proc killed with INT as 130).
func TestShellWithoutTerminal(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.stdin = strings.NewReader("")
	done := make(chan result, 1)
	go func() { done <- h.run("shell", "s1") }()
	procs := h.svc.SessionProcs(domain.MustParseSessionID("s1"))
	require.Eventually(t, func() bool {
		list, _ := procs.Procs(context.Background())
		return len(list) == 1
	}, 10*time.Second, 10*time.Millisecond)
	list, _ := procs.Procs(context.Background())
	require.True(t, list[0].TTY)
	require.Equal(t, defaultShell, list[0].Command)
	require.NoError(t, procs.SignalProc(context.Background(), list[0].ID, "INT"))
	r := <-done
	require.Equal(t, 130, r.code, r.stderr)
	require.Equal(t, defaultShell+"\n", r.stdout)
	_, err := procs.Proc(context.Background(), list[0].ID)
	require.ErrorIs(t, err, sandbox.ErrProcNotFound, "removed once it ended")
}
