package sandbox

import (
	"bytes"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCapture(t *testing.T) {
	t.Parallel()
	const n = 1000
	pattern := func(size int) []byte {
		b := make([]byte, size)
		for i := range b {
			b[i] = byte('a' + i%26)
		}
		return b
	}
	tests := []struct {
		name          string
		limit         int
		writes        []int // sizes, cut from one running pattern
		wantKept      int
		wantTruncated bool
	}{
		{name: "nothing written", limit: n, wantKept: 0},
		{name: "empty writes", limit: n, writes: []int{0, 0}, wantKept: 0},
		{name: "under the limit", limit: n, writes: []int{10, 20}, wantKept: 30},
		{name: "exactly N", limit: n, writes: []int{n}, wantKept: n},
		{name: "exactly N in pieces", limit: n, writes: []int{400, 600}, wantKept: n},
		{name: "N+1", limit: n, writes: []int{n + 1}, wantKept: n, wantTruncated: true},
		{name: "N then 1", limit: n, writes: []int{n, 1}, wantKept: n, wantTruncated: true},
		{name: "N then empty", limit: n, writes: []int{n, 0}, wantKept: n},
		{name: "many small writes", limit: n, writes: repeatInt(7, 500), wantKept: n, wantTruncated: true},
		{name: "one huge write", limit: n, writes: []int{50 * n}, wantKept: n, wantTruncated: true},
		{name: "straddling write", limit: n, writes: []int{n - 3, 10, 10}, wantKept: n, wantTruncated: true},
		{name: "zero limit", limit: 0, writes: []int{1}, wantKept: 0, wantTruncated: true},
		{name: "negative limit", limit: -5, writes: []int{1}, wantKept: 0, wantTruncated: true},
		{name: "the exec limit", limit: MaxOutputBytes, writes: []int{3 << 20}, wantKept: MaxOutputBytes, wantTruncated: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			total := 0
			for _, s := range tt.writes {
				total += s
			}
			src := pattern(total)
			c := NewCapture(tt.limit)
			off := 0
			for _, s := range tt.writes {
				got, err := c.Write(src[off : off+s])
				require.NoError(t, err)
				require.Equal(t, s, got, "Write must report the whole slice taken")
				off += s
			}
			require.Equal(t, src[:tt.wantKept], append([]byte{}, c.Bytes()...))
			require.Equal(t, string(src[:tt.wantKept]), c.String())
			require.Equal(t, tt.wantTruncated, c.Truncated())
			require.LessOrEqual(t, cap(c.buf), max(tt.limit, 0), "memory must stay within the limit")
		})
	}
}

func repeatInt(v, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func TestCaptureBytesIsACopy(t *testing.T) {
	t.Parallel()
	c := NewCapture(8)
	_, _ = c.Write([]byte("abc"))
	b := c.Bytes()
	b[0] = 'X'
	require.Equal(t, "abc", c.String())
}

func TestCaptureNil(t *testing.T) {
	t.Parallel()
	var c *Capture
	require.Empty(t, c.String())
	require.Nil(t, c.Bytes())
	require.False(t, c.Truncated())
}

// TestCaptureConcurrent reads while two writers write, as an adapter does
// when a straggler still holds the stream; -race checks it.
func TestCaptureConcurrent(t *testing.T) {
	t.Parallel()
	c := NewCapture(4096)
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				_, _ = c.Write([]byte("0123456789"))
			}
		}()
	}
	for range 100 {
		_ = c.String()
		_ = c.Truncated()
	}
	wg.Wait()
	require.Equal(t, bytes.Repeat([]byte("0123456789"), 409), c.Bytes()[:4090])
	require.Len(t, c.String(), 4096)
	require.True(t, c.Truncated())
}
