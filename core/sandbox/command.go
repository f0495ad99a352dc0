package sandbox

import "strings"

// ShellQuote quotes s as one single-quoted shell word, safe for any bytes but
// NUL (which no argv can carry).
func ShellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// KeepAliveArgv is every sandbox's main process (C-PROV-9): make the workdir,
// then sleep forever. The workdir is quoted, never trusted as shell text.
func KeepAliveArgv(workdir string) []string {
	return []string{"/bin/bash", "-c", "mkdir -p " + ShellQuote(workdir) + " && while :; do sleep 3600; done"}
}
