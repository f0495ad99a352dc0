package domain

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func TestClip(t *testing.T) {
	tests := []struct {
		name, in, want string
		max            int
	}{
		{"short stays", "abc", "abc", 8},
		{"exactly max stays", "abcdefgh", "abcdefgh", 8},
		{"long is cut with an ellipsis", "abcdefghij", "abcdefgh…", 8},
		{"a rune is never split", "abcdefg\u00e9z", "abcdefg…", 8},
		{"empty", "", "", 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ClipTo(tt.in, tt.max)
			require.Equal(t, tt.want, got)
			require.True(t, utf8.ValidString(got))
		})
	}
	require.Equal(t, strings.Repeat("x", ClipLen)+"…", Clip(strings.Repeat("x", 100)))
}
