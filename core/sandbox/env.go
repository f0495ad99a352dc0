package sandbox

import (
	"fmt"
	"sort"

	"github.com/sandgate/sandgate/core/domain"
)

// reservedEnv are names the platform sets or whose value would change how
// every process in the sandbox loads or routes (CONTRACT §0). Case-sensitive.
var reservedEnv = map[string]bool{
	"PATH": true, "LD_PRELOAD": true, "LD_LIBRARY_PATH": true, "LD_AUDIT": true,
	"BASH_ENV": true, "ENV": true, "IFS": true,
	"HTTP_PROXY": true, "HTTPS_PROXY": true, "NO_PROXY": true,
	"http_proxy": true, "https_proxy": true, "no_proxy": true,
}

// ReservedEnvName reports whether name is one the platform reserves. It is
// advisory (C-VAL-2): ValidateEnv accepts reserved names, because the
// platform's own injections pass through it too; a caller filling Env from an
// untrusted source drops these keys itself.
func ReservedEnvName(name string) bool { return reservedEnv[name] }

// ValidEnvName reports whether name matches [A-Za-z_][A-Za-z0-9_]*.
func ValidEnvName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '_', c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// ValidateEnv checks every key of env (values are opaque) and names the first
// invalid one in sorted order, so the error is the same on every call.
func ValidateEnv(env map[string]string) error {
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !ValidEnvName(k) {
			return fmt.Errorf("env: invalid variable name %q: must match [A-Za-z_][A-Za-z0-9_]*", domain.Clip(k))
		}
	}
	return nil
}
