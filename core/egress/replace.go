package egress

import (
	"bytes"
	"io"
	"slices"
)

// Replacer replaces every occurrence of a set of byte strings in one
// left-to-right pass: at each position the longest match wins, and inserted
// text is never scanned again (a secret that happens to contain a placeholder
// stays as it is). Substitution (placeholder → secret) and echo redaction
// (secret → placeholder) are both Replacers. A nil or empty Replacer copies
// its input. It is immutable and safe for concurrent use; a Stream is not.
type Replacer struct {
	pairs  []pair
	maxOld int
}

type pair struct {
	old, new []byte
	id       string
}

// newReplacer builds a Replacer; empty olds are skipped.
func newReplacer(pairs []pair) *Replacer {
	r := &Replacer{}
	for _, p := range pairs {
		if len(p.old) == 0 {
			continue
		}
		r.pairs = append(r.pairs, p)
		r.maxOld = max(r.maxOld, len(p.old))
	}
	return r
}

// Empty reports whether the Replacer changes nothing.
func (r *Replacer) Empty() bool { return r == nil || len(r.pairs) == 0 }

// Replace returns src with every match replaced and the ids of the pairs that
// matched (sorted, each once).
func (r *Replacer) Replace(src []byte) ([]byte, []string) {
	s := r.Stream()
	out := s.Write(src)
	out = append(out, s.Flush()...)
	return out, s.Used()
}

// ReplaceString is Replace for a header value.
func (r *Replacer) ReplaceString(src string) (string, []string) {
	out, used := r.Replace([]byte(src))
	return string(out), used
}

// Stream replaces across chunk boundaries: it holds back only the tail of a
// chunk that could still begin a match (at most the longest old string minus
// one byte), so a stream of events flows without waiting when nothing looks
// like a match. Feeding a stream in any chunking yields exactly Replace of
// the whole.
type Stream struct {
	r    *Replacer
	tail []byte
	used map[string]bool
}

// Stream starts a stream.
func (r *Replacer) Stream() *Stream { return &Stream{r: r, used: map[string]bool{}} }

// Write consumes a chunk and returns the output that is final so far.
func (s *Stream) Write(chunk []byte) []byte { return s.process(chunk, false) }

// Flush ends the stream and returns the rest of the output.
func (s *Stream) Flush() []byte { return s.process(nil, true) }

// Used returns the ids of the pairs that matched so far (sorted, each once).
func (s *Stream) Used() []string {
	ids := make([]string, 0, len(s.used))
	for id := range s.used {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (s *Stream) process(chunk []byte, final bool) []byte {
	if s.r.Empty() {
		return append([]byte(nil), chunk...)
	}
	buf := append(s.tail, chunk...)
	out := make([]byte, 0, len(buf))
	next := s.r.finder(buf)
	limit := len(buf)
	if !final {
		limit = s.r.undecided(buf, 0)
	}
	i := 0
	for {
		if !final && i > limit {
			limit = s.r.undecided(buf, i)
		}
		p, k := next(i)
		if p < 0 || p >= limit {
			out = append(out, buf[i:max(i, limit)]...)
			s.tail = append([]byte(nil), buf[max(i, limit):]...)
			return out
		}
		out = append(out, buf[i:p]...)
		out = append(out, s.r.pairs[k].new...)
		s.used[s.r.pairs[k].id] = true
		i = p + len(s.r.pairs[k].old)
	}
}

// finder returns a function that finds the leftmost complete match at or
// after i in buf, the longest one at that position (p is -1 when there is
// none). It remembers each old string's next occurrence, so a whole pass
// costs one scan of buf per old string, however many matches it finds.
func (r *Replacer) finder(buf []byte) func(i int) (p, k int) {
	const unknown = -2
	pos := make([]int, len(r.pairs))
	for j := range pos {
		pos[j] = unknown
	}
	return func(i int) (p, k int) {
		p, k = -1, -1
		for j, pr := range r.pairs {
			if pos[j] == unknown || pos[j] >= 0 && pos[j] < i {
				pos[j] = bytes.Index(buf[i:], pr.old)
				if pos[j] >= 0 {
					pos[j] += i
				}
			}
			q := pos[j]
			if q >= 0 && (p < 0 || q < p || q == p && len(pr.old) > len(r.pairs[k].old)) {
				p, k = q, j
			}
		}
		return p, k
	}
}

// undecided returns the first position at or after i where more input could
// still change the outcome: the rest of buf from there is a proper prefix of
// some old string. Output before it is final.
func (r *Replacer) undecided(buf []byte, i int) int {
	for j := max(i, len(buf)-r.maxOld+1); j < len(buf); j++ {
		rest := buf[j:]
		for _, pr := range r.pairs {
			if len(pr.old) > len(rest) && bytes.HasPrefix(pr.old, rest) {
				return j
			}
		}
	}
	return len(buf)
}

// Reader returns src with the replacement applied as it is read: the
// streaming form for a response body (echo redaction) that keeps SSE and
// chunked responses flowing.
func (r *Replacer) Reader(src io.Reader) *Reader {
	return &Reader{src: src, s: r.Stream(), buf: make([]byte, 32<<10)}
}

// Reader is the io.Reader Replacer.Reader returns.
type Reader struct {
	src  io.Reader
	s    *Stream
	buf  []byte
	out  []byte
	err  error
	done bool
}

// Read implements io.Reader. It returns output as soon as any is final and
// reports src's error (io.EOF included) after the held tail is flushed.
func (rd *Reader) Read(p []byte) (int, error) {
	for len(rd.out) == 0 {
		if rd.done {
			return 0, rd.err
		}
		n, err := rd.src.Read(rd.buf)
		rd.out = rd.s.Write(rd.buf[:n])
		if err != nil {
			rd.out = append(rd.out, rd.s.Flush()...)
			rd.err, rd.done = err, true
		}
	}
	n := copy(p, rd.out)
	rd.out = rd.out[n:]
	return n, nil
}

// Used returns the ids of the pairs that matched so far.
func (rd *Reader) Used() []string { return rd.s.Used() }
