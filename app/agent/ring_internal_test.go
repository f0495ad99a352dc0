package agent

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		writes  []string
		from    int64
		limit   int
		want    string
		offset  int64
		dropped int64
	}{
		{"empty", nil, 0, 10, "", 0, 0},
		{"growing", []string{"abc", "de"}, 1, 10, "bcde", 1, 0},
		{"exactly full", []string{"0123456789"}, 0, 10, "0123456789", 0, 0},
		{"wrapped", []string{"0123456", "789ab"}, 0, 20, "23456789ab", 2, 2},
		{"wrapped, read across the seam", []string{"0123456", "789ab", "cd"}, 5, 20, "56789abcd", 5, 0},
		{"one write past the size", []string{"xy", strings.Repeat("z", 5) + "0123456789"}, 3, 20, "0123456789", 7, 4},
		{"limited", []string{"0123456789"}, 2, 3, "234", 2, 0},
		{"past the end", []string{"abc"}, 7, 10, "", 7, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRing(10)
			var total int
			for _, w := range tc.writes {
				r.write([]byte(w))
				total += len(w)
			}
			require.EqualValues(t, total, r.total())
			require.LessOrEqual(t, len(r.buf), 10)
			s, _ := r.read(tc.from, tc.limit)
			require.Equal(t, tc.want, string(s.data))
			require.Equal(t, tc.offset, s.offset)
			require.Equal(t, tc.dropped, s.dropped)
		})
	}
}

func TestRingWakesReaders(t *testing.T) {
	t.Parallel()
	r := newRing(4)
	_, changed := r.read(0, 4)
	require.False(t, closed(changed))
	r.write([]byte("a"))
	require.True(t, closed(changed), "a write wakes a waiting reader")
	s, changed := r.read(0, 4)
	require.Equal(t, "a", string(s.data))
	require.False(t, closed(changed))
}
