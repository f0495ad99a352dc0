package domain

import "unicode/utf8"

// ClipLen is how much of a caller's string an error message quotes.
const ClipLen = 64

// Clip bounds text a caller or a sandbox chose (an id, a key, a path, a
// command's stderr) before an error message or a log line echoes it: at
// most ClipLen bytes, then "…".
func Clip(s string) string { return ClipTo(s, ClipLen) }

// ClipTo is Clip at max bytes. It cuts at a rune boundary, so valid UTF-8
// stays valid (a JSON error body or a span attribute would otherwise carry
// a replacement character).
func ClipTo(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
