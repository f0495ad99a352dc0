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
//	internal                                          500
package agent
