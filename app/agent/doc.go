// Package agent is the in-sandbox agent's server logic (cmd/agent wires it
// to its stdin and stdout): an http.Handler that serves every route of
// core/agentwire with real system calls — process groups, wait status,
// kill(2), lstat(2), rename(2) — where the fallback path runs bash scripts
// (core/sandbox/shell). Each route keeps the contract of the script it
// replaces, step for step; the files say which.
//
// Every refusal is an agentwire.Error document with one status per code:
//
//	file_not_exist                                    404
//	is_directory, not_directory, not_regular_file,
//	not_replaceable                                   409
//	not_writable, not_readable (with the strerror)    403
//	file_too_large, size_mismatch, short_delivery     422
//	invalid_argument (a bad path, parameter or body)  400 (411: no Content-Length)
//	proc_not_found                                    404
//	proc_exited, stdin_closed                         409
//	too_many_procs                                    429
//	internal                                          500
//
// # Procs and the agent's lifetime
//
// Procs (procs.go) are commands the agent owns past the call that started
// them, and past the executor's stream: with an agent key (the executor
// always has one) a provider starts `sandgate-agent relay` and writes the
// sandbox's token (agentwire.Token) as its first line. The relay reaches
// the sandbox's one daemon (daemon.go) on a unix socket in DaemonDir,
// starting it when nothing answers, and copies bytes both ways, so the
// yamux session runs end to end between the executor and the daemon. The
// daemon serves one Server per connection, all sharing its Procs; a
// connection's end kills that Server's execs, never the procs. It exits
// after DefaultDaemonIdle with no connection and no running proc.
//
// Authentication, both ways (daemonauth.go): the sandbox's processes run as
// the agent's uid, so the socket's mode keeps nobody out. Relay and daemon
// speak TLS 1.3 with one Ed25519 key derived from the token, each pinning
// the other's certificate to it: a process that took the socket's name or
// sits between them cannot finish a handshake, and cannot read or alter
// what follows. The token reaches the daemon once, from the relay that
// started it, each checking the other's pid (SO_PEERCRED) first; it is
// never in argv or the environment, and both processes are non-dumpable.
// A relay that cannot reach a daemon (no writable directory, a foreign
// one, a process holding the lock or the name) serves its stream alone,
// as `serve` does: every operation works and its procs end with the
// stream.
package agent
