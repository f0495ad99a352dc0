package egress

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// minBase64Core is the shortest run of base64 characters redacted as the
// encoding of a secret: shorter runs would match unrelated base64 text.
const minBase64Core = 8

// echoForms returns the spellings an origin may echo a secret in, the
// literal first, each once:
//
//   - JSON string escapes: every combination of Go's HTML-safe escaping
//     (\u0026 for &, < and >), ASCII-only output (\uXXXX for every non-ASCII
//     character, as Python's json.dumps), escaped solidus (\/, as PHP), in
//     lower- and upper-case hex;
//   - percent-encoding: every byte but the unreserved ones escaped (a URL
//     query value; space as %20 or +), or only what a path must escape, in
//     upper- and lower-case hex;
//   - base64, standard and URL alphabets, at each of the three alignments
//     the secret may have inside a longer encoded value (the characters
//     that depend on neighbouring bytes are left out).
//
// What is not here (other encodings, a secret split, reordered or
// transformed) is listed in docs/SECURITY.md: redaction stops accidental
// echoes, not an origin that means to leak.
func echoForms(secret string) []string {
	seen := map[string]bool{}
	var out []string
	add := func(s string) {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	add(secret)
	for mask := range 16 {
		add(jsonEscape(secret, mask&1 != 0, mask&2 != 0, mask&4 != 0, mask&8 != 0))
	}
	for _, s := range []string{url.QueryEscape(secret), url.PathEscape(secret), strings.ReplaceAll(url.QueryEscape(secret), "+", "%20")} {
		add(s)
		add(lowerHex(s))
	}
	for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
		for _, core := range base64Cores(enc, secret) {
			add(core)
		}
	}
	return out
}

// jsonEscape spells s inside a JSON string the way one encoder or another
// does.
func jsonEscape(s string, html, ascii, slash, upper bool) string {
	format := "\\u%04x"
	if upper {
		format = "\\u%04X"
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '/' && slash:
			b.WriteString("\\/")
		case r == '\n':
			b.WriteString("\\n")
		case r == '\r':
			b.WriteString("\\r")
		case r == '\t':
			b.WriteString("\\t")
		case r < 0x20, html && (r == '<' || r == '>' || r == '&'), r == '\u2028', r == '\u2029', r == utf8.RuneError:
			fmt.Fprintf(&b, format, r)
		case ascii && r >= 0x80:
			if r > 0xffff {
				hi, lo := utf16.EncodeRune(r)
				fmt.Fprintf(&b, format+format, hi, lo)
				continue
			}
			fmt.Fprintf(&b, format, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// lowerHex lower-cases the hex digits of every %XX escape in s.
func lowerHex(s string) string {
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			b[i+1], b[i+2] = lowerByte(b[i+1]), lowerByte(b[i+2])
			i += 2
		}
	}
	return string(b)
}

func lowerByte(c byte) byte {
	if c >= 'A' && c <= 'F' {
		return c + 'a' - 'A'
	}
	return c
}

// base64Cores returns, for the secret at each offset modulo 3 inside a
// longer value, the base64 characters that depend on the secret's bytes
// alone: character i of the encoding covers bits [6i, 6i+6), so after k
// leading bytes the pure ones run from ceil(8k/6) to floor(8(k+n)/6).
func base64Cores(enc *base64.Encoding, secret string) []string {
	var out []string
	for k := range 3 {
		full := enc.EncodeToString(append(make([]byte, k), secret...))
		from, to := (8*k+5)/6, 8*(k+len(secret))/6
		if to-from >= minBase64Core {
			out = append(out, full[from:to])
		}
	}
	return out
}

// ContainsFold reports whether s holds, in any letter case, a string the
// Replacer replaces. Header names are compared so: net/http re-cases them.
func (r *Replacer) ContainsFold(s string) bool {
	if r.Empty() {
		return false
	}
	ls := strings.ToLower(s)
	for _, p := range r.pairs {
		if strings.Contains(ls, strings.ToLower(string(p.old))) {
			return true
		}
	}
	return false
}
