package agentwire

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
)

// RelayArgv starts the agent as a relay to its sandbox's daemon, which owns
// the procs and outlives every stream: the provider writes the sandbox's
// Token and a newline as the first bytes of the exec's stdin, then speaks
// exactly as to Argv's agent (the relay copies bytes; the yamux session runs
// end to end between the provider and the daemon).
func RelayArgv() []string { return []string{Binary, "relay"} }

// MaxTokenLine bounds the relay's first line (the token and its newline).
const MaxTokenLine = 2*sha256.Size + 1

// Token is the secret a sandbox's daemon and its relays share: HMAC-SHA256
// of the sandbox's engine id (a container id, a pod UID) under the
// executor's agent key, hex. It is derived, never stored, so a restarted
// executor reaches the daemon its predecessor started; a sandbox's own
// processes never see it (it travels on the relay's stdin only).
func Token(key []byte, sandbox string) string {
	m := hmac.New(sha256.New, key)
	_, _ = m.Write([]byte(sandbox))
	return hex.EncodeToString(m.Sum(nil))
}
