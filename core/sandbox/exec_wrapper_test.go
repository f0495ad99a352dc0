package sandbox

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// killWatchdog is bash that finds and kills its own wrapper's watchdog —
// the wrapper's child ($PPID's) that leads a process group of its own —
// retrying until the watchdog has started.
const killWatchdog = `k=
until [ -n "$k" ]; do
	for f in /proc/[0-9]*/stat; do
		read -r s <"$f" || continue
		p=${f#/proc/}
		p=${p%/stat}
		set -- ${s##*) }
		if [ "$2" = "$PPID" ] && [ "$3" = "$p" ]; then kill -KILL -- "-$p" && k=1; fi
	done 2>/dev/null
	[ -n "$k" ] || sleep 0.02
done
echo watchdog killed
`

// mark is the watchdog's line for a 1 s deadline.
const mark = "sandgate: command exceeded its 1 s deadline and was killed\n"

// TestExecWrapper runs every case at once, and alone (not t.Parallel), so
// that the timing bounds measure the wrapper rather than a loaded machine.
func TestExecWrapper(t *testing.T) {
	type want struct {
		exit     int
		timedOut bool
		enforced bool
		stdout   *string
		stderr   *string
		// finished bounds ExecEvidence.Finished; max 0 = no bound.
		minFinished, maxFinished time.Duration
	}
	str := func(s string) *string { return &s }
	// fired: the watchdog killed the group, before the adapter had to
	// (TestExecWrapperPrecision bounds how soon, on a quiet machine).
	fired := func(w want) want {
		w.exit, w.timedOut, w.minFinished, w.maxFinished = ExitKilled, true, time.Second, time.Second+EnforceGrace
		return w
	}
	tests := []struct {
		name    string
		cmd     string
		timeout time.Duration
		opts    runOpts
		want    want
		check   func(t *testing.T, r execRun)
	}{
		{
			name: "normal command", cmd: "echo out; echo err >&2", timeout: 2 * time.Second,
			want: want{stdout: str("out\n"), stderr: str("err\n"), maxFinished: 2 * time.Second},
		},
		{
			name: "stdout and stderr stay apart", cmd: "echo a; echo b >&2; echo c; echo d >&2", timeout: 2 * time.Second,
			want: want{stdout: str("a\nc\n"), stderr: str("b\nd\n")},
		},
		{name: "exit code passes through", cmd: "exit 3", timeout: 2 * time.Second, want: want{exit: 3}},
		{name: "exit 124 inside the deadline", cmd: "exit 124", timeout: 2 * time.Second, want: want{exit: 124}},
		{
			name: "SIGKILLs itself inside the deadline", cmd: "echo e >&2; kill -KILL $$", timeout: 2 * time.Second,
			want: want{exit: ExitKilled, stderr: str("e\n"), maxFinished: 2 * time.Second},
		},
		{
			name: "SIGKILLs its whole group inside the deadline", cmd: "kill -KILL 0", timeout: 2 * time.Second,
			want: want{exit: ExitKilled, stderr: str(""), maxFinished: 2 * time.Second},
		},
		{
			name: "overruns", cmd: "echo started; sleep 30", timeout: time.Second,
			want: fired(want{stdout: str("started\n"), stderr: str(mark)}),
		},
		{
			name: "grandchildren in the group die at the deadline", timeout: time.Second,
			cmd:  "sleep 30 & echo $!; (sleep 30; true) & echo $!; sleep 30",
			want: fired(want{}),
			check: func(t *testing.T, r execRun) {
				pids := strings.Fields(r.res.Stdout)
				require.Len(t, pids, 2)
				for _, s := range pids {
					pid, err := strconv.Atoi(s)
					require.NoError(t, err)
					require.False(t, processLive(pid), "grandchild %d survived", pid)
				}
			},
		},
		{
			name: "kills its watchdog, then overruns", cmd: killWatchdog + "sleep 30", timeout: time.Second,
			want: want{exit: ExitKilled, timedOut: true, enforced: true, stdout: str("watchdog killed\n"), stderr: str("")},
		},
		{
			name: "kills its watchdog, overruns, exits 0 before enforcement", cmd: killWatchdog + "sleep 1.3; exit 0",
			timeout: time.Second,
			want:    want{exit: 0, timedOut: true, stdout: str("watchdog killed\n"), minFinished: 1300 * time.Millisecond},
		},
		{
			name: "kills its wrapper and keeps running", cmd: "kill -KILL $PPID; sleep 30", timeout: time.Second,
			want: fired(want{stderr: str(mark)}),
		},
		{
			name: "kills its wrapper and its watchdog", cmd: killWatchdog + "kill -KILL $PPID; sleep 30", timeout: time.Second,
			want: want{exit: ExitKilled, timedOut: true, enforced: true, stdout: str("watchdog killed\n")},
		},
		{
			name: "kills its wrapper, exits inside the deadline", cmd: "kill -KILL $PPID; sleep 0.3", timeout: 2 * time.Second,
			want: want{exit: ExitKilled, minFinished: 300 * time.Millisecond, maxFinished: 2 * time.Second},
		},
		{
			// Its relay's death ends the lifeline, as a departed caller's
			// would: the watchdog tells them apart by W's parent.
			name: "kills the relay, W's parent, then overruns", timeout: time.Second, opts: runOpts{relay: true},
			cmd:  `read -r s </proc/$PPID/stat; s=${s##*) }; s=${s#* }; kill -KILL "${s%% *}"; echo relay killed; sleep 30`,
			want: fired(want{stdout: str("relay killed\n"), stderr: str(mark)}),
		},
		{
			name: "caller leaves under a deadline, under the relay", cmd: "sleep 30", timeout: 20 * time.Second,
			opts: runOpts{relay: true, leaveAfter: 300 * time.Millisecond},
			want: want{exit: ExitKilled, stderr: str(""), minFinished: 300 * time.Millisecond, maxFinished: 2 * time.Second},
		},
		{
			name: "closes stdout and stderr, then overruns", cmd: "echo before; exec >&- 2>&-; sleep 30", timeout: time.Second,
			want: fired(want{stdout: str("before\n"), stderr: str(mark)}),
		},
		{
			name: "straggler holding stdout", cmd: "sleep 30 & echo done; exit 5", timeout: 2 * time.Second,
			want: want{exit: 5, stdout: str("done\n"), maxFinished: 2 * time.Second},
			check: func(t *testing.T, r execRun) {
				require.Less(t, r.elapsed, 10*time.Second, "the adapter must not wait for the straggler's EOF")
			},
		},
		{
			name: "stdin is not the caller's", cmd: `read -r line; echo "[$line]"; readlink /proc/self/fd/0`,
			timeout: 2 * time.Second, want: want{stdout: str("[]\n/dev/null\n")},
		},
		{
			name: "timeout rounds up to whole seconds", cmd: "sleep 1.4; echo ok", timeout: 1100 * time.Millisecond,
			want:  want{stdout: str("ok\n"), minFinished: 1400 * time.Millisecond},
			check: func(t *testing.T, r execRun) { require.Equal(t, 2*time.Second, r.ev.Deadline) },
		},
		{
			name: "output past the cap is drained", timeout: 2 * time.Second,
			cmd:  "head -c 3000000 /dev/zero; head -c 3000001 /dev/zero >&2; echo tail >&2; exit 5",
			want: want{exit: 5},
			check: func(t *testing.T, r execRun) {
				require.True(t, r.res.Truncated)
				require.Len(t, r.res.Stdout, MaxOutputBytes)
				require.Len(t, r.res.Stderr, MaxOutputBytes)
				require.Equal(t, strings.Repeat("\x00", MaxOutputBytes), r.res.Stderr, "the header is not part of stderr")
			},
		},
		{
			name: "a wrapper that does not lead its group makes itself one", cmd: "echo started; sleep 30",
			timeout: time.Second, opts: runOpts{noSetsid: true},
			want: fired(want{stdout: str("started\n"), stderr: str(mark)}),
		},
		{
			name: "a fake header from the command is output", cmd: `echo "sandgate-exec:$$" >&2`, timeout: 2 * time.Second,
			check: func(t *testing.T, r execRun) {
				require.Regexp(t, `^sandgate-exec:\d+\n$`, r.res.Stderr)
				require.NotEqual(t, "sandgate-exec:"+strconv.Itoa(r.pid)+"\n", r.res.Stderr)
			},
		},
		{
			name: "missing workdir", cmd: "echo never", timeout: 2 * time.Second, opts: runOpts{workdir: "/nonexistent/sandgate"},
			want: want{exit: 126, stdout: str("")},
			check: func(t *testing.T, r execRun) {
				require.Contains(t, r.res.Stderr, "cd: /nonexistent/sandgate: No such file or directory")
			},
		},
		{
			name: "missing workdir, no deadline", cmd: "echo never", opts: runOpts{workdir: "/nonexistent/sandgate"},
			want: want{exit: 126, stdout: str("")},
			check: func(t *testing.T, r execRun) {
				require.Regexp(t, `^sandgate-exec: line \d+: cd: /nonexistent/sandgate: No such file or directory\n$`, r.res.Stderr)
			},
		},
		{
			name: "no deadline: the same wrapper, no timer", cmd: "echo hi; echo e >&2; exit 7",
			want:  want{exit: 7, stdout: str("hi\n"), stderr: str("e\n")},
			check: func(t *testing.T, r execRun) { require.Zero(t, r.ev.Deadline) },
		},
		{
			name: "caller leaves, no deadline: the whole session dies", cmd: "sleep 30 & echo $!; sleep 30",
			opts:  runOpts{leaveAfter: 300 * time.Millisecond},
			want:  want{exit: ExitKilled, stderr: str(""), minFinished: 300 * time.Millisecond, maxFinished: 2 * time.Second},
			check: requireSessionGone,
		},
		{
			name: "caller leaves under a deadline: the session dies, the watchdog too", cmd: "sleep 30 & echo $!; sleep 30",
			timeout: 20 * time.Second, opts: runOpts{leaveAfter: 300 * time.Millisecond},
			want:  want{exit: ExitKilled, stderr: str(""), minFinished: 300 * time.Millisecond, maxFinished: 2 * time.Second},
			check: requireSessionGone,
		},
		{
			name: "caller stays: a finished command keeps its background job", cmd: "sleep 30 & echo $!",
			check: func(t *testing.T, r execRun) {
				pid, err := strconv.Atoi(strings.TrimSpace(r.res.Stdout))
				require.NoError(t, err)
				require.True(t, processLive(pid), "the background job was killed with the call")
				requireSession(t, r, []int{pid}) // the watchdog is gone
			},
		},
	}
	reqs := make([]ExecRequest, len(tests))
	opts := make([]runOpts, len(tests))
	for i, tt := range tests {
		reqs[i], opts[i] = ExecRequest{Command: tt.cmd, Timeout: tt.timeout}, tt.opts
		if opts[i].dir == "" {
			opts[i].dir = t.TempDir()
		}
	}
	runs := runAll(t, reqs, opts)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runs[i]
			require.NoError(t, r.err)
			t.Logf("finished %v, returned %v, evidence %+v", r.ev.Finished, r.elapsed, r.ev)
			w := tt.want
			require.Equal(t, w.exit, r.res.ExitCode, "exit code; stderr %q", r.res.Stderr)
			require.Equal(t, w.timedOut, r.res.TimedOut, "TimedOut; evidence %+v", r.ev)
			require.Equal(t, w.enforced, r.ev.Enforced, "Enforced; evidence %+v", r.ev)
			if w.stdout != nil {
				require.Equal(t, *w.stdout, r.res.Stdout)
			}
			if w.stderr != nil {
				require.Equal(t, *w.stderr, r.res.Stderr)
			}
			require.GreaterOrEqual(t, r.ev.Finished, w.minFinished)
			if w.maxFinished > 0 {
				require.Less(t, r.ev.Finished, w.maxFinished)
			}
			if r.ev.Deadline > 0 {
				require.LessOrEqual(t, r.elapsed, r.ev.Deadline+ReturnGrace, "C-EXEC-3: the call returns by deadline + 2 s")
			}
			if tt.opts.workdir == "" || w.exit != 126 {
				require.True(t, r.hdrOK, "the wrapper writes its header")
				if !tt.opts.relay {
					require.Equal(t, r.pid, r.hdrPid, "the header names the wrapper")
				}
			}
			if tt.check != nil {
				tt.check(t, r)
			}
		})
	}
}

// TestExecWrapperPrecision: on its own, the watchdog kills an overrunning
// command within half a second of its deadline.
func TestExecWrapperPrecision(t *testing.T) {
	r := runOne(t, ExecRequest{Command: "sleep 30", Timeout: time.Second}, runOpts{dir: t.TempDir()})
	require.True(t, r.res.TimedOut)
	require.False(t, r.ev.Enforced)
	require.GreaterOrEqual(t, r.ev.Finished, time.Second)
	require.Less(t, r.ev.Finished, 1500*time.Millisecond)
}

// TestExecWrapperHostileWorkdir: a working directory whose name is shell
// syntax is entered verbatim, with and without a deadline.
func TestExecWrapperHostileWorkdir(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dir := filepath.Join(root, "-n $(touch pwned) 'q\"\n`touch pwned2`;x")
	require.NoError(t, os.Mkdir(dir, 0o755))
	for _, timeout := range []time.Duration{0, 2 * time.Second} {
		r := runOne(t, ExecRequest{Command: `printf '%s' "$PWD"; pwd -P >&2`, Timeout: timeout},
			runOpts{workdir: dir, dir: "/"})
		require.Equal(t, 0, r.res.ExitCode, r.res.Stderr)
		require.Equal(t, dir, r.res.Stdout)
		require.Equal(t, dir+"\n", r.res.Stderr)
	}
	entries, err := os.ReadDir(root)
	require.NoError(t, err)
	require.Len(t, entries, 1, "nothing but the workdir was created")
}

// TestExecWrapperParity: the wrapped command, with and without a deadline,
// sees what `/bin/bash -c CMD` sees — the same text, arguments, shell flags, environment and status —
// however hostile the text. Only its parent and process group differ.
func TestExecWrapperParity(t *testing.T) {
	t.Parallel()
	commands := []string{
		`printf '<%s>\n' "$0" "$#" "$-" "$*"`,
		"echo 'single' \"double\" `echo back` $(echo sub) \\$(not) \"$(printf '%s' \"nested 'q'\")\"\necho line2\n\n",
		`echo "$BASH_EXECUTION_STRING"`,
		`env | grep -v '^_=' | LC_ALL=C sort`,
		`pwd; echo "$PWD"; echo "${OLDPWD-unset}"`,
		`cat; echo "eof:$?"`,
		`echo (`,
		`exit 300`,
		`kill -TERM $$`,
		`trap -p; ulimit -n; umask`,
		`grep -E '^(Sig(Ign|Blk)|NoNewPrivs)' /proc/self/status; ls /proc/self/fd`,
		`sleep 0.1 & jobs; wait; echo "$?"`,
		`-x`,
		`--version >/dev/null; echo "$?"`,
		``,
		"echo \xff\xfe binary",
	}
	env := []string{"PATH=/usr/bin:/bin", "HOME=/root", "LANG=C", "SHLVL=3"}
	dir := t.TempDir()
	variants := []struct {
		name    string
		timeout time.Duration
		opts    runOpts
	}{
		{name: "direct", opts: runOpts{dir: dir, env: env, bare: true}},
		{name: "wrapper, no deadline", opts: runOpts{dir: dir, env: env}},
		{name: "wrapper", timeout: 5 * time.Second, opts: runOpts{dir: dir, env: env}},
		{name: "cd", opts: runOpts{workdir: dir, dir: "/", env: env}},
		{name: "wrapper with cd", timeout: 5 * time.Second, opts: runOpts{workdir: dir, dir: "/", env: env}},
		{name: "wrapper, no leader", timeout: 5 * time.Second, opts: runOpts{dir: dir, env: env, noSetsid: true}},
	}
	var reqs []ExecRequest
	var opts []runOpts
	for _, cmd := range commands {
		for _, v := range variants {
			reqs = append(reqs, ExecRequest{Command: cmd, Timeout: v.timeout})
			opts = append(opts, v.opts)
		}
	}
	runs := runAll(t, reqs, opts)
	for i, cmd := range commands {
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			direct := runs[i*len(variants)]
			require.NoError(t, direct.err)
			for j, v := range variants[1:] {
				r := runs[i*len(variants)+1+j]
				require.NoError(t, r.err)
				require.Equal(t, direct.res, r.res, "%s differs from /bin/bash -c for %q", v.name, cmd)
			}
		})
	}
}
