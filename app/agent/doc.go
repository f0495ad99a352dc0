// Package agent is the in-sandbox agent's server logic (cmd/agent wires it
// to its stdin and stdout): an http.Handler that serves every route of
// core/agentwire with real system calls — process groups, wait status,
// kill(2), lstat(2), rename(2) — where the fallback path runs bash scripts
// (core/sandbox/shell). Each route keeps the contract of the script it
// replaces, step for step; the files say which.
package agent
