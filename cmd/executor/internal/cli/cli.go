// Package cli is the executor's command line for people: the subcommands
// create, exec, shell, ps, logs, kill, cp, export, rm, ls, stat, mkdir,
// port-forward and mcp drive a running `executor serve` over its HTTP API
// (adapters/httpapi.Client), so the CLI holds no state and needs no Docker.
//
// It parses with the standard flag package, one FlagSet per subcommand:
// small subcommands do not earn a dependency, and the one thing flag
// lacks (flags after positional arguments, `create S --image I`) is a loop
// (parseArgs). Output is for people by default and JSON with --json; a
// usage error exits 2, a failed call 1, and exec exits with the command's
// own code (124 when it timed out).
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
)

// Exit codes of Run beside the command's own ones (exec).
const (
	// ExitOK: the call succeeded (for exec: the command exited 0).
	ExitOK = 0
	// ExitFailure: the API call failed, or the command's code is not one a
	// process can exit with.
	ExitFailure = 1
	// ExitUsage: a command line the CLI does not accept; nothing was called.
	ExitUsage = 2
	// ExitInterrupted: Ctrl-C (or SIGTERM) cancelled the call, the code a
	// shell gives a process SIGINT ended.
	ExitInterrupted = 130
	// ExitTimeout is exec's code for a command killed at its deadline, the
	// code timeout(1) uses.
	ExitTimeout = 124
)

// Env and flag names the CLI reads; flags override the environment.
const (
	// EnvURL names the executor's API URL (flag --url).
	EnvURL = "SANDGATE_URL"
	// EnvToken holds the API token (flag --token). The variable is the safe
	// place: a flag's value is visible to every local user in argv.
	EnvToken = "SANDGATE_API_TOKEN"
	// DefaultURL is where `executor serve` listens by default.
	DefaultURL = "http://127.0.0.1:7070"
)

// Streams is the process around Run: its standard streams, environment and
// terminal, injected so tests drive Run like a shell would.
type Streams struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Getenv reads the environment (nil reads none).
	Getenv func(string) string
	// StderrIsTerminal reports whether a progress bar may be drawn;
	// StdoutIsTerminal whether export must refuse to print a tar.
	StderrIsTerminal bool
	StdoutIsTerminal bool
	// Terminal is stdin when it is a terminal (nil otherwise): what an
	// interactive exec puts in raw mode and measures.
	Terminal *os.File
	// Version is the binary's, as `executor version` prints it.
	Version string
	// HTTPClient carries the API calls; nil is a client without a timeout,
	// since a transfer of 500 MB may take long (Ctrl-C cancels ctx).
	HTTPClient *http.Client
}

// OSStreams returns the Streams of this process.
func OSStreams() Streams {
	return Streams{
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv,
		StderrIsTerminal: isTerminal(os.Stderr), StdoutIsTerminal: isTerminal(os.Stdout),
		Terminal: terminalOrNil(os.Stdin),
	}
}

func terminalOrNil(f *os.File) *os.File {
	if isTerminal(f) {
		return f
	}
	return nil
}

// synopses are the subcommands' usage lines.
var synopses = map[string]string{
	"create":       "create SESSION [--image I] [--workdir W] [--isolation runc|gvisor] [--limited HOST,...] [--env K=V]... [--credential SPEC]...",
	"exec":         "exec SESSION [--timeout D] [-i | -t | -d] -- COMMAND...",
	"shell":        "shell SESSION [-- COMMAND...]",
	"ps":           "ps SESSION [--json]",
	"logs":         "logs [-f] [--from N] [--stream stdout|stderr] SESSION PROC",
	"kill":         "kill [-s SIGNAL] [--rm] SESSION PROC",
	"cp":           "cp SESSION:/path LOCAL|-  or  cp LOCAL|- SESSION:/path",
	"export":       "export SESSION [--root /workspace] [-o FILE]",
	"rm":           "rm SESSION [--checkpoint]  or  rm [-r] SESSION:/path",
	"ls":           "ls [--json]  or  ls SESSION:/path [--json]",
	"stat":         "stat SESSION:/path [--json]",
	"mkdir":        "mkdir [-p] SESSION:/path [--json]",
	"port-forward": "port-forward SESSION [LOCAL:]REMOTE",
	"mcp":          "mcp [--http ADDR] [--credential SPEC]... [--allow-unrestricted] [--image I]",
}

// notes follow a subcommand's flags in its -h.
var notes = map[string]string{
	"create": `A credential's secret is never a flag value: argv is readable by every local user
(ps, /proc/PID/cmdline) and kept in shell history. secret-env=VAR reads it from the
environment, secret-stdin from stdin (one credential at most), e.g.
  printf %s "$TOKEN" | executor create s1 --limited api.example.com \
    --credential id=gh,name=GH_TOKEN,secret-stdin,hosts=api.example.com,locations=headers
`,
	"exec": `The words after -- are joined with spaces and run by the sandbox's bash -c, as ssh
does: quote a pipeline to keep it whole (executor exec s1 -- 'make && make test').
The exit code is the command's; 124 when it timed out. The output is printed as it comes.
-i passes stdin to the command (automatic when stdin is a pipe or a file); -t runs it on a
terminal, interactive (raw mode, window size followed); -d starts it in the background and
prints its proc id (executor ps, logs, kill).
`,
	"shell": `An interactive terminal in the sandbox (bash unless a COMMAND is given), as exec -t.
Its exit code is the shell's. If the CLI is cut off, the shell is hung up (HUP).
`,
	"logs": `A proc keeps the last 1 MiB of each stream; --from reads from an offset (an older one
starts at the oldest byte kept, and says how many were dropped).
`,
	"rm": `rm SESSION removes the session and its sandbox. rm SESSION:/path removes that path in
the sandbox: a file, a symlink (never what it names) or an empty directory; -r a tree.
`,
	"ls": `Without arguments, ls lists the sessions. With SESSION:/path, it lists a directory: one
line per entry with its mode, size, modification time (UTC) and name; a name that is not
printable text is shown quoted.
`,
	"port-forward": `Listens on 127.0.0.1:LOCAL (absent: the same number as REMOTE; 0: any free port, printed)
and carries each connection to REMOTE on the sandbox's loopback, through the executor and
the in-sandbox agent, whatever the session's networking. Runs until Ctrl-C.
A connection has no half-close: when either side ends, both are closed.
`,
	"mcp": `A Model Context Protocol server for AI agents and MCP clients (Claude Desktop, Claude Code,
Cursor): tools create_sandbox, exec, read_file, write_file, list_files, export_workspace,
list_sandboxes and delete_sandbox, and the resource template
sandgate://sessions/{session_id}/files{+path}, acting on the executor at --url.
Over stdio by default (the client starts it); --http ADDR serves streamable HTTP at
http://ADDR/ and asks clients for $SANDGATE_MCP_TOKEN as a bearer token. Credentials
(--credential, as in create; secret-env only) stay in this process: a model names them
by id and the sandbox sees a placeholder. Without --allow-unrestricted, a model can
open a sandbox's network only to the hosts it lists.
`,
	"cp": `SESSION:/path is a file in the sandbox (a trailing / appends the local base name);
- is stdin or stdout. A pipe on stdin is spooled to a temporary file first: the API
takes an upload only with its size. A progress bar shows on a terminal past 4 MiB.
`,
}

// runner runs one subcommand with its arguments.
type runner func(ctx context.Context, s *Streams, args []string) error

func runners() map[string]runner {
	return map[string]runner{
		"create": runCreate, "exec": runExec, "cp": runCp, "export": runExport, "rm": runRm, "ls": runLs,
		"stat": runStat, "mkdir": runMkdir, "shell": runShell, "ps": runPs, "logs": runLogs, "kill": runKill,
		"port-forward": runPortForward, "mcp": runMCP,
	}
}

// Run runs the subcommand args[0] with the rest of args and returns the
// process exit code. Errors go to s.Stderr as one line for people.
func Run(ctx context.Context, args []string, s Streams) int {
	if s.Getenv == nil {
		s.Getenv = func(string) string { return "" }
	}
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		printUsage(s.Stderr)
		if len(args) == 0 {
			return ExitUsage
		}
		return ExitOK
	}
	run, ok := runners()[args[0]]
	if !ok {
		_, _ = fmt.Fprintf(s.Stderr, "executor: unknown command %q\n", args[0])
		printUsage(s.Stderr)
		return ExitUsage
	}
	return exitCode(s.Stderr, args[0], run(ctx, &s, args[1:]))
}

// exitCode reports err on stderr and returns the exit code it stands for.
func exitCode(stderr io.Writer, name string, err error) int {
	var ue *usageError
	var ce exitError
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, errHelp):
		return ExitOK
	case errors.As(err, &ce):
		return int(ce)
	case errors.Is(err, context.Canceled):
		_, _ = fmt.Fprintf(stderr, "executor %s: interrupted\n", name)
		return ExitInterrupted
	case errors.As(err, &ue):
		_, _ = fmt.Fprintf(stderr, "executor %s: %s\nusage: executor %s\n", name, ue.msg, synopses[name])
		return ExitUsage
	default:
		_, _ = fmt.Fprintf(stderr, "executor %s: %s\n", name, err)
		return ExitFailure
	}
}

func printUsage(w io.Writer) {
	names := make([]string, 0, len(synopses))
	for n := range synopses {
		names = append(names, n)
	}
	sort.Strings(names)
	_, _ = fmt.Fprintln(w, "usage: executor COMMAND [ARGS]\n\ncommands:")
	// serve and version are main's; they are listed here so that one
	// usage shows the whole binary.
	_, _ = fmt.Fprintln(w, "  executor serve [flags]   (the service; executor serve -h)\n  executor version\n"+
		"  executor seccomp-profile   (the sandboxes' seccomp profile, for SANDGATE_K8S_SECCOMP_PROFILE)")
	for _, n := range names {
		_, _ = fmt.Fprintf(w, "  executor %s\n", synopses[n])
	}
	_, _ = fmt.Fprintf(w, "\nEvery command takes --url (default $%s or %s) and --token (default $%s);\n"+
		"create, exec, cp, rm, ls, stat and mkdir take --json for machine output.\n", EnvURL, DefaultURL, EnvToken)
}

// usageError is a command line the CLI does not accept: exit 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return &usageError{fmt.Sprintf(format, a...)} }

// exitError carries an exit code that is not a failure of the CLI (exec's
// command exited non-zero): Run exits with it and prints nothing.
type exitError int

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// errHelp is -h: the usage was printed, exit 0.
var errHelp = errors.New("help requested")
