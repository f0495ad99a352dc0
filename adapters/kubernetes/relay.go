package kubernetes

// relayScript runs a command (its argv follows) with stdout and stderr
// relayed through two `cat`s, so that the exec's own pipes are not inherited
// by the command or anything it leaves running. The reason: the container
// runtime ends an exec's stream, and reports its exit code, only once every
// holder of the exec's pipes has closed them, so a background process that
// keeps stdout open (`sleep 600 & echo hi; exit 3`) would hold a bare exec
// until it exits. Docker's adapter polls exec inspect instead; Kubernetes
// has no such call.
//
// In order, the relay:
//  1. keeps the exec's stdout and stderr on fds 3 and 4, and points its own
//     fds 1 and 2 at a cat each that copies to them;
//  2. runs the command with those pipes as its stdout and stderr, without
//     fds 3 and 4 (so nothing it starts inherits the exec's pipes), and with
//     its own stderr on /dev/null meanwhile, so that bash's report of a
//     child's signal death ("Killed") is not taken for the command's output.
//     The wrapper alone also gets the exec's own stderr as fd 8, for its
//     header line (core/sandbox/shell.ExecWrapper), which therefore reaches the
//     runtime even when the command kills the cats at once; the wrapper
//     closes it before the command starts.
//     The command runs as a job under job control (set -m), in a process
//     group of its own that it leads: the core's deadline wrapper kills and
//     probes the command by its group, and the exec's main process (this
//     relay) is the one runc made a group leader, not the wrapper — without
//     this the wrapper needs setsid in the image, and without setsid the
//     deadline's kills hit no group (C-EXEC-3);
//  3. points everything it holds at /dev/null — so that nothing it says
//     itself, such as bash's report of the jobs it kills next, can reach
//     the exec's streams — and waits for both cats to see EOF, bounded by
//     DRAIN: a straggler still holding a pipe gets its cat killed (its
//     later output is lost, as it would be once any exec returned);
//  4. exits with the command's status — 128+N when it died of signal N —
//     which the runtime reports as the exec's exit code.
//
// The exit code and the moment the stream ends are reported by the runtime,
// outside the sandbox; the relay only decides when a quiet pipe is given up.
// A command that kills the relay ends the exec at once (exit 137), which the
// deadline verdict treats as a wrapper killed by a signal: it follows the
// command's process group from the outside (sandbox.NeedsGroupCheck). The
// exec's end also ends the lifeline (containerd closes the stdin of an exec
// whose main process exited); the wrapper's watchdog does not take that for
// the caller leaving, because the wrapper no longer runs under the relay it
// started under, and keeps the deadline.
//
// Not closed: the command runs as the relay's uid, so it can open
// /proc/$PPID/fd/3 (the relay's copy of the exec's stdout) and hand it to a
// straggler that holds the exec open until it exits, as a bare exec would
// be held. Nothing inside the sandbox can be hidden from the sandbox's own
// uid; the deadline verdict does not depend on the stream's end
// (docs/DIVERGENCES.md).
const relayScript = `exec 3>&1 4>&2
exec 1> >(exec cat >&3 3>&- 4>&-)
o=$!
exec 2> >(exec cat >&4 3>&- 4>&-)
e=$!
exec 9>&2 2>/dev/null
set -m
"$@" 2>&9 8>&4 3>&- 4>&- 9>&- &
set +m
wait "$!"
rc=$?
exec >/dev/null 2>&1 3>&- 4>&- 9>&-
{ sleep "$DRAIN"; kill -KILL "$o" "$e"; } </dev/null &
k=$!
wait "$o" "$e"
kill -KILL "$k" 2>/dev/null
exit "$rc"
`

// relayDrain is how long the relay waits for a pipe held open by a
// straggler after the command ended: enough for the cats to pass on what is
// already in the pipes, short against the 5 s a straggling exec may take.
const relayDrain = "0.5"

// relayArgv runs argv under the relay. argv gets the exec's own stderr as
// fd 8 and must close it before it runs anything of the caller's, as the
// core's wrapper (sandbox.ExecArgv) does: anything that kept it would hold
// the exec open as a bare exec's straggler does.
func relayArgv(argv []string) []string {
	out := []string{"/bin/bash", "-c", "DRAIN=" + relayDrain + "\n" + relayScript, "sandgate-relay"}
	return append(out, argv...)
}
