package sandbox

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestValidEnvName(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"A", "_", "a", "A1", "_9", "PATH", "http_proxy", "X_Y_Z"} {
		require.True(t, ValidEnvName(ok), ok)
	}
	for _, bad := range []string{"", "1A", "A=B", "A B", "A-B", "A.B", "É", "A\x00", "A\n", "$A", "=", "A=", " A"} {
		require.False(t, ValidEnvName(bad), "%q", bad)
	}
}

func TestValidateEnv(t *testing.T) {
	t.Parallel()
	require.NoError(t, ValidateEnv(nil))
	require.NoError(t, ValidateEnv(map[string]string{"A": "x y", "B": "$lit", "C": "$(VAR)", "D": ""}))
	// Reserved names pass the grammar (C-VAL-2).
	require.NoError(t, ValidateEnv(map[string]string{"PATH": "/x", "LD_PRELOAD": "y"}))
	err := ValidateEnv(map[string]string{"OK": "1", "A=B": "x", "1X": "y"})
	require.ErrorContains(t, err, `"1X"`, "the first bad key in sorted order is named")
	require.ErrorContains(t, ValidateEnv(map[string]string{"A=B": "x"}), `"A=B"`)
}

func TestReservedEnvName(t *testing.T) {
	t.Parallel()
	for _, r := range []string{"PATH", "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "BASH_ENV", "ENV", "IFS",
		"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy"} {
		require.True(t, ReservedEnvName(r), r)
	}
	for _, n := range []string{"path", "Http_Proxy", "HOME", "TOKEN", "ld_preload"} {
		require.False(t, ReservedEnvName(n), n)
	}
}
