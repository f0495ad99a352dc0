package sandbox

import (
	"errors"
	"fmt"
	"io"
)

// ErrTruncatedArchive reports an export stream that ended inside the tar
// archive, before its end-of-archive marker.
var ErrTruncatedArchive = errors.New("export archive truncated")

// NewTarGuard passes a tar stream through unchanged while following its
// block structure, so a stream cut mid-archive (a daemon or exec transfer
// that died) surfaces as a Read error rather than a clean EOF that would pass
// a half checkpoint for a whole one (C-EXP-2). It does not buffer: it looks
// at each 512-byte header as it goes by and skips the data blocks it
// announces.
func NewTarGuard(rc io.ReadCloser) io.ReadCloser { return &tarGuard{rc: rc} }

type tarGuard struct {
	rc    io.ReadCloser
	hdr   [512]byte
	hdrN  int   // bytes of the current header block seen so far
	skip  int64 // data and padding bytes before the next header
	zeros int   // zero header blocks seen (end-of-archive marker)
	bad   error // a malformed header: the stream is not a tar
}

func (g *tarGuard) Read(p []byte) (int, error) {
	n, err := g.rc.Read(p)
	g.track(p[:n])
	if g.bad != nil {
		return n, g.bad
	}
	if errors.Is(err, io.EOF) && g.zeros == 0 {
		return n, fmt.Errorf("%w: stream ended at a %s", ErrTruncatedArchive, g.position())
	}
	return n, err
}

func (g *tarGuard) Close() error { return g.rc.Close() }

func (g *tarGuard) position() string {
	if g.skip > 0 {
		return "member's data"
	}
	return "header"
}

// track advances the block state over b.
func (g *tarGuard) track(b []byte) {
	for len(b) > 0 && g.zeros == 0 && g.bad == nil {
		if g.skip > 0 {
			k := min(g.skip, int64(len(b)))
			g.skip -= k
			b = b[k:]
			continue
		}
		k := copy(g.hdr[g.hdrN:], b)
		g.hdrN += k
		b = b[k:]
		if g.hdrN < len(g.hdr) {
			return
		}
		g.hdrN = 0
		if allZero(g.hdr[:]) {
			g.zeros++
			continue
		}
		size, ok := parseTarSize(g.hdr[124:136])
		if !ok {
			g.bad = fmt.Errorf("%w: malformed member header", ErrTruncatedArchive)
			return
		}
		g.skip = (size + 511) &^ 511
	}
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// parseTarSize reads a header's size field: octal digits padded with spaces
// or NULs, or the GNU base-256 form (high bit of the first byte set).
func parseTarSize(f []byte) (int64, bool) {
	if f[0]&0x80 != 0 {
		var n int64
		for i, c := range f {
			if i == 0 {
				c &= 0x7f
			}
			if n > (1<<62)>>8 {
				return 0, false
			}
			n = n<<8 | int64(c)
		}
		return n, true
	}
	var n int64
	seen := false
	for _, c := range f {
		switch {
		case c >= '0' && c <= '7':
			if n > (1<<62)>>3 {
				return 0, false
			}
			n = n<<3 | int64(c-'0')
			seen = true
		case c == ' ' || c == 0:
			if seen {
				return n, true
			}
		default:
			return 0, false
		}
	}
	return n, true
}
