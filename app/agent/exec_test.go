package agent_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/agentwire"
)

func TestExecExitCodes(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	for cmd, want := range map[string]int{
		"true": 0, "exit 3": 3, "exit 124": 124, "": 0,
		"kill -TERM $$": 128 + 15, "kill -KILL $$": 137, "nosuchcommand-sg": 127,
	} {
		res := runExec(t, srv.URL, agentwire.ExecRequest{Command: cmd})
		require.NotNil(t, res.exit, cmd)
		require.Equal(t, want, res.exit.Code, cmd)
		require.NotZero(t, res.pid, cmd)
		require.False(t, res.exit.Killed, cmd)
	}
}

func TestExecStreamsApartAndByteExact(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	res := runExec(t, srv.URL, agentwire.ExecRequest{
		Command: `printf 'out\xff\xfe\000x'; printf 'err\x80\n' >&2; printf more`,
	})
	require.Equal(t, []byte("out\xff\xfe\x00xmore"), res.stdout)
	require.Equal(t, []byte("err\x80\n"), res.stderr)
	require.Equal(t, 0, res.exit.Code)
	require.False(t, res.exit.Truncated)
}

func TestExecEnvironmentAndStdin(t *testing.T) {
	t.Setenv("SANDGATE_AGENT_TEST", "kept")
	srv := newServer(t)
	res := runExec(t, srv.URL, agentwire.ExecRequest{
		Command: `printf '%s|' "$SANDGATE_AGENT_TEST"; cat; read -r s </proc/$$/stat; s=${s##*) }; set -- $s; echo "|$3|$$"`,
	})
	parts := strings.Split(strings.TrimSpace(string(res.stdout)), "|")
	require.Equal(t, []string{"kept", "", strconv.Itoa(res.pid), strconv.Itoa(res.pid)}, parts,
		"environment kept, stdin /dev/null, a group of its own led by the command")
}

func TestExecWorkdir(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	dir := t.TempDir()
	res := runExec(t, srv.URL, agentwire.ExecRequest{Command: "pwd", Workdir: dir})
	require.Equal(t, dir+"\n", string(res.stdout))

	res = runExec(t, srv.URL, agentwire.ExecRequest{Command: "echo never", Workdir: dir + "/missing"})
	require.Equal(t, 126, res.exit.Code)
	require.Zero(t, res.pid, "nothing started")
	require.Empty(t, res.stdout)
	require.Equal(t, "sandgate-exec: cd: "+dir+"/missing: No such file or directory\n", string(res.stderr))
}

func TestExecCaps(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	res := runExec(t, srv.URL, agentwire.ExecRequest{
		Command:        `head -c 300000 /dev/zero; printf 'ab' >&2`,
		MaxOutputBytes: 1000,
	})
	require.Len(t, res.stdout, 1000)
	require.Equal(t, "ab", string(res.stderr))
	require.True(t, res.exit.Truncated)
	require.Equal(t, 0, res.exit.Code, "read and dropped: the command never blocks on a full pipe")

	res = runExec(t, srv.URL, agentwire.ExecRequest{Command: `printf 12345`, MaxOutputBytes: 5})
	require.Equal(t, "12345", string(res.stdout))
	require.False(t, res.exit.Truncated, "exactly the cap is not truncated")
}

func TestExecDeadlineKills(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	start := time.Now()
	res := runExec(t, srv.URL, agentwire.ExecRequest{Command: "echo started; sleep 30", DeadlineSeconds: 1})
	require.Less(t, time.Since(start), 3*time.Second)
	require.True(t, res.exit.Killed)
	require.Equal(t, 137, res.exit.Code)
	require.GreaterOrEqual(t, res.exit.FinishedMillis, int64(1000))
	require.Equal(t, "started\n", string(res.stdout))
	require.Equal(t, fmt.Sprintf(agentwire.DeadlineMark, 1), string(res.stderr))
}

func TestExecKillsOwnGroupInsideDeadline(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	res := runExec(t, srv.URL, agentwire.ExecRequest{Command: "sleep 30 & kill -9 0", DeadlineSeconds: 5})
	require.Equal(t, 137, res.exit.Code)
	require.False(t, res.exit.Killed)
	require.Less(t, res.exit.FinishedMillis, int64(5000))
	require.Empty(t, res.stderr)
}

func TestExecKilledLeaderGroupRunsOn(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	// The command kills its own leader; its group lives on for a while: it
	// is finished when the group is empty, not when the leader died.
	res := runExec(t, srv.URL, agentwire.ExecRequest{Command: "sleep 1 & kill -9 $$", DeadlineSeconds: 5})
	require.Equal(t, 137, res.exit.Code)
	require.False(t, res.exit.Killed)
	require.GreaterOrEqual(t, res.exit.FinishedMillis, int64(900))
	require.Less(t, res.exit.FinishedMillis, int64(5000))

	// And past the deadline the group is killed, the verdict evidence ≥ it.
	res = runExec(t, srv.URL, agentwire.ExecRequest{Command: "sleep 30 & kill -9 $$", DeadlineSeconds: 1})
	require.True(t, res.exit.Killed)
	require.GreaterOrEqual(t, res.exit.FinishedMillis, int64(1000))
	require.Contains(t, string(res.stderr), fmt.Sprintf(agentwire.DeadlineMark, 1))
}

func TestExecStragglerKeepsRunning(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	start := time.Now()
	res := runExec(t, srv.URL, agentwire.ExecRequest{
		Command: `sleep 30 & echo $!; exec 2>&-`, DeadlineSeconds: 10,
	})
	killGroupAtCleanup(t, res.pid)
	require.Less(t, time.Since(start), 2*time.Second, "the straggler holds stdout; the call must not wait for it")
	require.Equal(t, 0, res.exit.Code)
	require.False(t, res.exit.Killed)
	pid, err := strconv.Atoi(strings.TrimSpace(string(res.stdout)))
	require.NoError(t, err)
	time.Sleep(100 * time.Millisecond)
	require.False(t, gone(pid), "the straggler keeps running")
}

func TestExecStragglerOutputAfterDrainIsDropped(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	// A straggler that writes on for ever: the answer ends within the drain
	// bound, and the straggler neither blocks nor dies of SIGPIPE.
	start := time.Now()
	res := runExec(t, srv.URL, agentwire.ExecRequest{Command: `(while :; do echo tick; sleep 0.05; done) & echo "pid $!"`})
	killGroupAtCleanup(t, res.pid)
	require.Less(t, time.Since(start), 3*time.Second, "the drain is bounded (1.5 s)")
	pid := 0
	for _, line := range strings.Split(string(res.stdout), "\n") {
		if n, ok := strings.CutPrefix(line, "pid "); ok {
			pid, _ = strconv.Atoi(n)
		}
	}
	require.NotZero(t, pid, "output: %q", res.stdout)
	time.Sleep(300 * time.Millisecond)
	require.False(t, gone(pid), "the writing straggler still runs after the answer")
}

func TestExecCallerGoneKillsGroup(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp := postExec(t, ctx, srv.URL, agentwire.ExecRequest{Command: `sleep 30 & echo $!; wait`})
	defer func() { _ = resp.Body.Close() }()
	pidc := make(chan int, 1)
	go func() {
		_ = readEventsQuiet(resp.Body, func(ev agentwire.ExecEvent) {
			if ev.Stdout != nil {
				n, _ := strconv.Atoi(strings.TrimSpace(string(ev.Stdout)))
				pidc <- n
			}
		})
	}()
	var pid int
	select {
	case pid = <-pidc:
	case <-time.After(5 * time.Second):
		t.Fatal("no output")
	}
	require.False(t, gone(pid))
	cancel()
	eventually(t, 3*time.Second, func() bool { return gone(pid) }, "the caller left; the group must die")
}

// readEventsQuiet reads events until the stream ends, without asserting:
// for a stream the test cuts on purpose.
func readEventsQuiet(r io.Reader, seen func(agentwire.ExecEvent)) error {
	dec := newDecoder(r)
	for {
		var ev agentwire.ExecEvent
		if err := dec.Decode(&ev); err != nil {
			return err
		}
		seen(ev)
	}
}

func TestExecRefusesBadRequests(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	for _, body := range []string{
		`{"command":"true","deadline_seconds":-1}`,
		`{"command":"true","max_output_bytes":-5}`,
		`{"command":"a\u0000b"}`,
		`{"Command":"true"}`,
		`{"command":"true","bogus":1}`,
		`not json`,
	} {
		resp, err := http.Post(srv.URL+agentwire.PathExec, "application/json", strings.NewReader(body))
		require.NoError(t, err)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, body)
		require.Equal(t, agentwire.CodeInvalid, decodeError(t, resp).Code, body)
	}
}

func TestExecDeadlineEdgeCases(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	// Closes both streams, then overruns: the streams' end says nothing,
	// and the mark still travels (the agent writes it, not the command).
	res := runExec(t, srv.URL, agentwire.ExecRequest{Command: "exec >&- 2>&-; sleep 30", DeadlineSeconds: 1})
	require.True(t, res.exit.Killed)
	require.GreaterOrEqual(t, res.exit.FinishedMillis, int64(1000))
	require.Equal(t, fmt.Sprintf(agentwire.DeadlineMark, 1), string(res.stderr))

	// Exits 124 inside its deadline: a result like any other.
	res = runExec(t, srv.URL, agentwire.ExecRequest{Command: "exit 124", DeadlineSeconds: 5})
	require.Equal(t, 124, res.exit.Code)
	require.False(t, res.exit.Killed)
	require.Less(t, res.exit.FinishedMillis, int64(5000))

	// The mark counts against the stderr cap, as the wrapper's does.
	res = runExec(t, srv.URL, agentwire.ExecRequest{Command: "sleep 30", DeadlineSeconds: 1, MaxOutputBytes: 10})
	require.True(t, res.exit.Killed)
	require.Equal(t, fmt.Sprintf(agentwire.DeadlineMark, 1)[:10], string(res.stderr))
	require.True(t, res.exit.Truncated)
}
