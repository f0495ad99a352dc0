package proxy

import (
	"io"
	"net"
	"sync"
)

// relayBufferSize is the buffer of one direction of an opaque tunnel while
// it copies. Plain reads and writes of up to 64 KiB measured cheaper than
// splice(2) between the two TCP connections (what io.Copy does for a
// *net.TCPConn pair) on loopback: about two thirds of the CPU per byte and
// more throughput, both directions (BenchmarkConnect64MiB,
// BenchmarkConnectUpload64MiB). 128 and 256 KiB were no better.
const relayBufferSize = 64 << 10

var relayBuffers = sync.Pool{New: func() any {
	b := make([]byte, relayBufferSize)
	return &b
}}

// copyConn copies src to dst until src ends (io.Copy's result) with plain
// reads and writes through a pooled buffer: the wrappers hide
// (*net.TCPConn).ReadFrom and WriteTo, which would splice.
func copyConn(dst, src net.Conn) (int64, error) {
	bp, _ := relayBuffers.Get().(*[]byte)
	defer relayBuffers.Put(bp)
	return io.CopyBuffer(writerOnly{dst}, readerOnly{src}, *bp)
}

type (
	readerOnly struct{ io.Reader }
	writerOnly struct{ io.Writer }
)
