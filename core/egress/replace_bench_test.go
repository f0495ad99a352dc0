package egress

import (
	"bytes"
	"io"
	"testing"
)

// BenchmarkReaderNoMatch streams 8 MiB of text with no secret in it
// through a two-secret redactor, the common case of a response body.
func BenchmarkReaderNoMatch(b *testing.B) {
	r := rep("SECRET-ONE-VALUE-0123456789", "sgph_a", "SECRET-TWO-VALUE-9876543210", "sgph_b")
	in := bytes.Repeat([]byte("data: {\"choices\":[{\"delta\":{\"content\":\"hello world\"}}]}\n\n"), (8<<20)/58)
	buf := make([]byte, 32<<10)
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		if _, err := io.CopyBuffer(io.Discard, onlyReader{r.Reader(bytes.NewReader(in))}, buf); err != nil {
			b.Fatal(err)
		}
	}
}

type onlyReader struct{ io.Reader }
