package sandbox

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"path"
)

// WritablePaths are the paths a provider mounts writable space over when the
// root filesystem is read-only: the workdir, /tmp and /mnt, cleaned and
// de-duplicated in that order. An empty workdir means DefaultWorkdir.
func WritablePaths(workdir string) []string {
	if workdir == "" {
		workdir = DefaultWorkdir
	}
	out := []string{path.Clean(workdir)}
	for _, p := range []string{"/tmp", "/mnt"} {
		if p != out[0] {
			out = append(out, p)
		}
	}
	return out
}

// CheckWriteSize refuses a negative stream size with ErrSizeNotALength. A
// caller holding an unknown count (-1 for a body without Content-Length) must
// measure the bytes first; this check runs before anything is created or
// carried to the sandbox.
func CheckWriteSize(size int64) error {
	if size < 0 {
		return fmt.Errorf("write size %d: %w", size, ErrSizeNotALength)
	}
	return nil
}

// TempPrefix starts the base name of every temporary write file (CONTRACT
// §0); the sweep (sweep.sh) finds interrupted writes' leftovers by it.
const TempPrefix = ".sandgate-write-"

// tempName returns a fresh temporary name beside target:
// <dir of target>/.sandgate-write-<16 lowercase hex>. The name lives in the
// target's own directory so the final rename never crosses a filesystem.
func tempName(target string) string {
	return tempNameN(target, randomNonce())
}

// tempNameN is tempName with the 64-bit suffix given, for a batch that derives
// every member's name from one nonce.
func tempNameN(target string, n uint64) string {
	return path.Join(path.Dir(target), fmt.Sprintf("%s%016x", TempPrefix, n))
}

// randomNonce draws 64 random bits.
func randomNonce() uint64 {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("sandbox: crypto/rand failed: %v", err))
	}
	return binary.BigEndian.Uint64(b[:])
}
