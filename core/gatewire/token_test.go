package gatewire

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNewToken(t *testing.T) {
	t.Parallel()
	a, b := NewToken(), NewToken()
	require.NotEqual(t, a, b)
	require.Len(t, a, TokenLen)
	require.True(t, strings.HasPrefix(a, "sgt_"))
	require.NoError(t, ValidateToken(a))
}

func TestValidateToken(t *testing.T) {
	t.Parallel()
	good := NewToken()
	for _, tc := range []struct {
		name, token, want string
	}{
		{"empty", "", "must start with"},
		{"no prefix", strings.TrimPrefix(good, "sgt_"), "must start with"},
		{"other prefix", "sgx_" + good[4:], "must start with"},
		{"short", good[:TokenLen-1], "must be 68 characters, got 67"},
		{"long", good + "0", "must be 68 characters, got 69"},
		{"upper case hex", "sgt_" + strings.Repeat("A", 64), "offset 4 is not lower-case hex"},
		{"non hex", good[:TokenLen-1] + "g", "offset 67 is not lower-case hex"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := ValidateToken(tc.token)
			require.ErrorIs(t, err, ErrInvalidToken)
			require.ErrorContains(t, err, tc.want)
			if len(tc.token) > 8 {
				require.NotContains(t, err.Error(), tc.token[4:])
			}
		})
	}
}

func TestTokenHash(t *testing.T) {
	t.Parallel()
	tok := NewToken()
	sum := sha256.Sum256([]byte(tok))
	require.Equal(t, hex.EncodeToString(sum[:]), TokenHash(tok))
	require.Len(t, TokenHash(tok), 64)
	require.NotEqual(t, TokenHash(tok), TokenHash(NewToken()))
}
