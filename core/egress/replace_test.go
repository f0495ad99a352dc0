package egress

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"
)

func rep(kv ...string) *Replacer {
	var pairs []pair
	for i := 0; i+1 < len(kv); i += 2 {
		pairs = append(pairs, pair{old: []byte(kv[i]), new: []byte(kv[i+1]), id: "id-" + kv[i]})
	}
	return newReplacer(pairs)
}

func TestReplace(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		r        *Replacer
		in, want string
		used     []string
	}{
		{rep("PH", "secret"), "a PH b PH", "a secret b secret", []string{"id-PH"}},
		{rep("PH", "PHPH"), "PHx", "PHPHx", []string{"id-PH"}}, // one pass: no re-scan
		{rep("ab", "1", "abc", "2"), "abcab", "21", []string{"id-ab", "id-abc"}},
		{rep("abc", "2", "ab", "1"), "abcab", "21", []string{"id-ab", "id-abc"}},
		{rep("aa", "X"), "aaa", "Xa", []string{"id-aa"}},
		{rep("bc", "X", "abcd", "Y"), "abcd", "Y", []string{"id-abcd"}},
		{rep("bc", "X", "abcd", "Y"), "abce", "aXe", []string{"id-bc"}},
		{rep("x", "y"), "", "", []string{}},
		{rep("", "y"), "abc", "abc", nil},
		{nil, "abc", "abc", nil},
	} {
		got, used := tc.r.ReplaceString(tc.in)
		require.Equal(t, tc.want, got, "%q", tc.in)
		if tc.used != nil {
			require.Equal(t, tc.used, used, "%q", tc.in)
		}
		require.Equal(t, tc.want, chunked(tc.r, tc.in, 1), "%q chunked", tc.in)
	}
	require.True(t, rep().Empty())
	require.True(t, (*Replacer)(nil).Empty())
}

// chunked feeds in to a Stream n bytes at a time.
func chunked(r *Replacer, in string, n int) string {
	s := r.Stream()
	var out []byte
	for len(in) > n {
		out = append(out, s.Write([]byte(in[:n]))...)
		in = in[n:]
	}
	out = append(out, s.Write([]byte(in))...)
	return string(append(out, s.Flush()...))
}

func TestStreamHoldsOnlyPossibleMatches(t *testing.T) {
	t.Parallel()
	s := rep("SECRET-VALUE", "sgph_x").Stream()
	// Nothing in this event could start a secret: it flows at once.
	require.Equal(t, "data: hello\n\n", string(s.Write([]byte("data: hello\n\n"))))
	// A possible beginning is held back until it is decided…
	require.Equal(t, "data: ", string(s.Write([]byte("data: SECRET-"))))
	require.Equal(t, "sgph_x!", string(s.Write([]byte("VALUE!"))))
	require.Equal(t, "SEC", string(append(s.Write([]byte("SEC")), s.Flush()...)))
	require.Equal(t, []string{"id-SECRET-VALUE"}, s.Used())
}

func TestReader(t *testing.T) {
	t.Parallel()
	r := rep("SECRET-VALUE", "sgph_x")
	in := strings.Repeat("abc SECRET-VALUE def ", 5000)
	want := strings.ReplaceAll(in, "SECRET-VALUE", "sgph_x")
	for _, src := range []io.Reader{
		strings.NewReader(in),
		iotest.OneByteReader(strings.NewReader(in)),
		iotest.DataErrReader(strings.NewReader(in)),
		iotest.HalfReader(strings.NewReader(in)),
	} {
		rd := r.Reader(src)
		got, err := io.ReadAll(rd)
		require.NoError(t, err)
		require.Equal(t, want, string(got))
		require.Equal(t, []string{"id-SECRET-VALUE"}, rd.Used())
	}
	boom := errors.New("boom")
	rd := r.Reader(io.MultiReader(strings.NewReader("x SECRET-VAL"), iotest.ErrReader(boom)))
	got, err := io.ReadAll(rd)
	require.ErrorIs(t, err, boom)
	require.Equal(t, "x SECRET-VAL", string(got))
	require.NoError(t, iotest.TestReader(r.Reader(strings.NewReader(in)), []byte(want)))
}

func TestReplaceLargeInputIsLinear(t *testing.T) {
	t.Parallel()
	// Many matches of one pair and none of another must not rescan the
	// whole buffer per match.
	r := rep("NEVER-THERE-AT-ALL", "x", "PH", "S")
	in := bytes.Repeat([]byte("PH"), 1<<19)
	out, _ := r.Replace(in)
	require.Len(t, out, 1<<19)
}

// sizes is a reader that returns its input in chunks of the given sizes,
// in turn.
type sizes struct {
	r     io.Reader
	sizes []int
	i     int
}

func (s *sizes) Read(p []byte) (int, error) {
	n := min(len(p), s.sizes[s.i%len(s.sizes)])
	s.i++
	return s.r.Read(p[:n])
}

func TestReaderMixedChunks(t *testing.T) {
	t.Parallel()
	r := rep("SECRET-VALUE", "sgph_x", "SECRET-VALUE-LONG", "sgph_y")
	// Long stretches with no match (the reader hands out its own buffer)
	// alternate with matches split across reads (it copies).
	var b strings.Builder
	for i := range 300 {
		b.WriteString(strings.Repeat("plain text ", i*7))
		b.WriteString([]string{"SECRET-VALUE", "SECRET-VALUE-LONG", "SECRET-VAL", "S"}[i%4])
	}
	in := b.String()
	want, _ := r.ReplaceString(in)
	for _, sz := range [][]int{{1}, {5, 40000, 3}, {32 << 10}, {7, 11, 13, 20000}} {
		got, err := io.ReadAll(r.Reader(&sizes{r: strings.NewReader(in), sizes: sz}))
		require.NoError(t, err)
		require.Equal(t, want, string(got), "sizes %v", sz)
	}
}

func TestStreamWriteOwnsResult(t *testing.T) {
	t.Parallel()
	s := rep("SECRET-VALUE", "sgph_x").Stream()
	chunk := []byte("no match here, SECRET-VA")
	out := s.Write(chunk)
	require.Equal(t, "no match here, ", string(out))
	copy(chunk, strings.Repeat("#", len(chunk))) // the caller reuses its buffer
	require.Equal(t, "no match here, ", string(out))
	require.Equal(t, "sgph_x!", string(s.Write([]byte("LUE!"))))
}
