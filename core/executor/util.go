package executor

import (
	"slices"
	"strings"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
)

// gateEnv is what a gated sandbox's environment gets from the provider; a
// caller's value for one of these would be silently replaced, so it is
// refused instead.
var gateEnv = sandbox.GateSandboxEnv()

// gateVariable reports whether the gate pairing sets the variable name.
func gateVariable(name string) bool {
	_, ok := gateEnv[name]
	return ok
}

func containsNUL(s string) bool { return strings.IndexByte(s, 0) >= 0 }

// clip shortens a caller's string for an error message.
func clip(s string) string {
	const max = 64
	if len(s) <= max {
		return s
	}
	return s[:max] + "…"
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func copyNetworking(n domain.Networking) domain.Networking {
	n.AllowedHosts = slices.Clone(n.AllowedHosts)
	return n
}
