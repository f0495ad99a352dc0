package sandbox

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// stripAll feeds chunks to a fresh HeaderStripper, flushes, and returns what
// came out and the pid it found.
func stripAll(t *testing.T, chunks [][]byte) (string, int, bool) {
	t.Helper()
	var out bytes.Buffer
	h := NewHeaderStripper(&out)
	for _, c := range chunks {
		n, err := h.Write(c)
		require.NoError(t, err)
		require.Equal(t, len(c), n)
	}
	require.NoError(t, h.Flush())
	<-h.Decided() // closed by now, or the test hangs
	pid, ok := h.Pid()
	return out.String(), pid, ok
}

// splits returns in cut every way into one, two and three pieces, and byte
// by byte.
func splits(in string) [][][]byte {
	b := []byte(in)
	out := [][][]byte{{b}}
	for i := 0; i <= len(b); i++ {
		out = append(out, [][]byte{b[:i], b[i:]})
		for j := i; j <= len(b) && j < i+30; j++ {
			out = append(out, [][]byte{b[:i], b[i:j], b[j:]})
		}
	}
	var bytewise [][]byte
	for i := range b {
		bytewise = append(bytewise, b[i:i+1])
	}
	return append(out, bytewise)
}

func TestHeaderStripper(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		wantOut string
		wantPid int // 0 = no header
	}{
		{name: "header then output", in: "sandgate-exec:4242\nerr\n", wantOut: "err\n", wantPid: 4242},
		{name: "header only", in: "sandgate-exec:17\n", wantOut: "", wantPid: 17},
		{name: "largest pid", in: "sandgate-exec:4194304\nx", wantOut: "x", wantPid: 4194304},
		{name: "fake header later is output", in: "sandgate-exec:99\nsandgate-exec:1234\n", wantOut: "sandgate-exec:1234\n", wantPid: 99},
		{name: "header bytes pass verbatim after it", in: "sandgate-exec:99\n\x00\xff\n", wantOut: "\x00\xff\n", wantPid: 99},
		{name: "missing header", in: "plain stderr\n", wantOut: "plain stderr\n"},
		{name: "empty stream", in: ""},
		{name: "header cut short", in: "sandgate-ex", wantOut: "sandgate-ex"},
		{name: "header without newline", in: "sandgate-exec:123", wantOut: "sandgate-exec:123"},
		{name: "no digits", in: "sandgate-exec:\nrest", wantOut: "sandgate-exec:\nrest"},
		{name: "non-digit", in: "sandgate-exec:12a\n", wantOut: "sandgate-exec:12a\n"},
		{name: "too many digits", in: "sandgate-exec:12345678\n", wantOut: "sandgate-exec:12345678\n"},
		{name: "pid above the limit", in: "sandgate-exec:4194305\n", wantOut: "sandgate-exec:4194305\n"},
		{name: "pid 1", in: "sandgate-exec:1\n", wantOut: "sandgate-exec:1\n"},
		{name: "pid 0", in: "sandgate-exec:0\n", wantOut: "sandgate-exec:0\n"},
		{name: "leading output", in: "x sandgate-exec:5\n", wantOut: "x sandgate-exec:5\n"},
		{name: "carriage return", in: "sandgate-exec:5\r\n", wantOut: "sandgate-exec:5\r\n"},
		{name: "wrong case", in: "Sandgate-exec:5\nz", wantOut: "Sandgate-exec:5\nz"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for _, chunks := range splits(tt.in) {
				out, pid, ok := stripAll(t, chunks)
				require.Equal(t, tt.wantOut, out, "chunks %q", chunks)
				require.Equal(t, tt.wantPid != 0, ok, "chunks %q", chunks)
				require.Equal(t, tt.wantPid, pid, "chunks %q", chunks)
			}
		})
	}
}

// TestHeaderStripperPending: undecided bytes are held back, not passed on,
// until the header is complete or the stream ends.
func TestHeaderStripperPending(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	h := NewHeaderStripper(&out)
	_, err := h.Write([]byte("sandgate-exec:12"))
	require.NoError(t, err)
	require.Zero(t, out.Len())
	_, ok := h.Pid()
	require.False(t, ok, "no pid before the newline")
	select {
	case <-h.Decided():
		t.Fatal("Decided before the header is complete")
	default:
	}
	require.NoError(t, h.Flush())
	<-h.Decided()
	require.Equal(t, "sandgate-exec:12", out.String())
	_, err = h.Write([]byte("3\n"))
	require.NoError(t, err)
	require.Equal(t, "sandgate-exec:123\n", out.String(), "after Flush bytes pass straight through")
	_, ok = h.Pid()
	require.False(t, ok)
	require.NoError(t, h.Flush(), "a second Flush is a no-op")
}

// failWriter fails every write after taking take bytes of it.
type failWriter struct{ take int }

var errSink = errors.New("sink failed")

func (f failWriter) Write(p []byte) (int, error) { return min(f.take, len(p)), errSink }

func TestHeaderStripperNextFails(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		first  string // written first (may decide the header)
		second string
		take   int
		wantN  int // count reported for second
	}{
		{name: "held bytes fail", first: "sandgate-", second: "x tail", wantN: 0},
		{name: "tail fails after the header", first: "", second: "sandgate-exec:5\ntail", take: 2, wantN: 18},
		{name: "pass-through fails", first: "sandgate-exec:5\n", second: "tail", take: 1, wantN: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := NewHeaderStripper(failWriter{take: tt.take})
			if tt.first != "" {
				_, err := h.Write([]byte(tt.first))
				require.NoError(t, err)
			}
			n, err := h.Write([]byte(tt.second))
			require.ErrorIs(t, err, errSink)
			require.Equal(t, tt.wantN, n)
		})
	}
	h := NewHeaderStripper(failWriter{})
	_, err := h.Write([]byte("sandgate"))
	require.NoError(t, err)
	require.ErrorIs(t, h.Flush(), errSink)
}

// FuzzHeaderStripper: any stream, split anywhere, strips the same as the
// whole stream at once; the output is the input minus at most one leading
// header line.
func FuzzHeaderStripper(f *testing.F) {
	f.Add([]byte("sandgate-exec:4242\nerr\n"), uint8(3))
	f.Add([]byte("sandgate-exec:"), uint8(1))
	f.Add([]byte("sandgate-exec:12345678\n"), uint8(9))
	f.Add([]byte("no header"), uint8(0))
	f.Fuzz(func(t *testing.T, in []byte, step uint8) {
		whole, pid, ok := stripAll(t, [][]byte{in})
		var chunks [][]byte
		for rest, s := in, int(step)%32+1; len(rest) > 0; {
			k := min(s, len(rest))
			chunks = append(chunks, rest[:k])
			rest = rest[k:]
		}
		split, pid2, ok2 := stripAll(t, chunks)
		require.Equal(t, whole, split)
		require.Equal(t, pid, pid2)
		require.Equal(t, ok, ok2)
		if ok {
			require.True(t, bytes.HasPrefix(in, []byte(HeaderPrefix)))
			require.Less(t, len(whole), len(in))
			require.Equal(t, string(in[len(in)-len(whole):]), whole)
		} else {
			require.Equal(t, string(in), whole)
		}
	})
}
