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
	tail []byte // held back: could still begin a match
	join []byte // tail+chunk, reused: only needed while a tail is held
	pos  []int  // finder state, reused across chunks
	used map[string]bool
}

// Stream starts a stream.
func (r *Replacer) Stream() *Stream { return &Stream{r: r, used: map[string]bool{}} }

// Write consumes a chunk and returns the output that is final so far. The
// result is the caller's: it never shares memory with chunk or the stream.
func (s *Stream) Write(chunk []byte) []byte { return s.process(nil, chunk, false, false) }

// Flush ends the stream and returns the rest of the output.
func (s *Stream) Flush() []byte { return s.process(nil, nil, true, false) }

// Used returns the ids of the pairs that matched so far (sorted, each once).
func (s *Stream) Used() []string {
	ids := make([]string, 0, len(s.used))
	for id := range s.used {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// process appends to dst the output of chunk that is final (all of it when
// final) and holds back the rest. With alias set it may instead return a
// prefix of chunk itself when nothing in it is replaced and nothing was held
// back: the common case of a response body costs no copy then. Nothing the
// stream keeps ever aliases chunk, which the caller may reuse.
func (s *Stream) process(dst, chunk []byte, final, alias bool) []byte {
	if s.r.Empty() {
		return append(dst, chunk...)
	}
	buf := chunk
	if len(s.tail) > 0 {
		s.join = append(append(s.join[:0], s.tail...), chunk...)
		buf = s.join
	}
	limit := len(buf)
	if !final {
		limit = s.r.undecided(buf, 0)
	}
	f := s.finder(buf)
	p, k := f.next(0)
	if (p < 0 || p >= limit) && alias && len(dst) == 0 && len(s.tail) == 0 {
		s.tail = append(s.tail[:0], buf[limit:]...)
		return buf[:limit]
	}
	i := 0
	for {
		if !final && i > limit {
			limit = s.r.undecided(buf, i)
		}
		if p < 0 || p >= limit {
			dst = append(dst, buf[i:max(i, limit)]...)
			// s.tail and s.join never share an array, so this copy is safe
			// when buf is s.join.
			s.tail = append(s.tail[:0], buf[max(i, limit):]...)
			return dst
		}
		dst = append(dst, buf[i:p]...)
		dst = append(dst, s.r.pairs[k].new...)
		s.used[s.r.pairs[k].id] = true
		i = p + len(s.r.pairs[k].old)
		p, k = f.next(i)
	}
}

// finder finds the leftmost complete match at or after a position in buf,
// the longest one at that position. It remembers each old string's next
// occurrence, so a whole pass costs one scan of buf per old string, however
// many matches it finds.
type finder struct {
	r   *Replacer
	buf []byte
	pos []int
}

const unknown = -2

// finder returns a finder over buf that reuses the stream's state.
func (s *Stream) finder(buf []byte) finder {
	if cap(s.pos) < len(s.r.pairs) {
		s.pos = make([]int, len(s.r.pairs))
	}
	pos := s.pos[:len(s.r.pairs)]
	for j := range pos {
		pos[j] = unknown
	}
	return finder{r: s.r, buf: buf, pos: pos}
}

// next returns the match at or after i: its position (-1 when there is
// none) and the index of its pair.
func (f finder) next(i int) (p, k int) {
	p, k = -1, -1
	for j, pr := range f.r.pairs {
		if f.pos[j] == unknown || f.pos[j] >= 0 && f.pos[j] < i {
			f.pos[j] = bytes.Index(f.buf[i:], pr.old)
			if f.pos[j] >= 0 {
				f.pos[j] += i
			}
		}
		q := f.pos[j]
		if q >= 0 && (p < 0 || q < p || q == p && len(pr.old) > len(f.r.pairs[k].old)) {
			p, k = q, j
		}
	}
	return p, k
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
	src   io.Reader
	s     *Stream
	buf   []byte // what src gave
	spare []byte // output storage, reused once rd.out is drained
	out   []byte // final output not yet read: in buf or in spare
	err   error
	done  bool
}

// Read implements io.Reader. It returns output as soon as any is final and
// reports src's error (io.EOF included) after the held tail is flushed.
func (rd *Reader) Read(p []byte) (int, error) {
	for len(rd.out) == 0 {
		if rd.done {
			return 0, rd.err
		}
		n, err := rd.src.Read(rd.buf)
		// rd.out may alias rd.buf: src is not read again before it is drained.
		rd.out = rd.s.process(rd.spare[:0], rd.buf[:n], err != nil, true)
		if len(rd.out) > 0 && &rd.out[0] != &rd.buf[0] {
			rd.spare = rd.out[:0] // keep what append grew
		}
		if err != nil {
			rd.err, rd.done = err, true
		}
	}
	n := copy(p, rd.out)
	rd.out = rd.out[n:]
	return n, nil
}

// Used returns the ids of the pairs that matched so far.
func (rd *Reader) Used() []string { return rd.s.Used() }
