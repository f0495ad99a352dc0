// Package storetest is test support for a store that stops taking writes:
// it makes a SQLite database's files immutable (chattr +i), so every write
// fails — also through the descriptors the store already holds, which a
// chmod would not stop for root — while reads keep working. This is how a
// read-only file, a read-only mount or a full disk looks to the executor.
package storetest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// ReadOnly makes the SQLite database at dbPath and its -wal file immutable
// until the returned func (also registered with t.Cleanup) is called. The
// -shm index stays writable: readers of a WAL database write to it, and
// the point is a store that reads but cannot write. It needs chattr and a file system
// with the immutable flag (ext4, xfs, btrfs) as root: without them the test
// is skipped, or fails under CI=true.
func ReadOnly(t *testing.T, dbPath string) (restore func()) {
	t.Helper()
	var files []string
	for _, suffix := range []string{"", "-wal"} {
		if _, err := os.Stat(dbPath + suffix); err == nil {
			files = append(files, filepath.Clean(dbPath+suffix))
		}
	}
	if len(files) == 0 {
		t.Fatalf("storetest: no database at %s", dbPath)
	}
	if out, err := exec.Command("chattr", append([]string{"+i"}, files...)...).CombinedOutput(); err != nil {
		msg := "storetest: cannot make the database read-only (chattr +i needs root and an ext4-like file system): " +
			strings.TrimSpace(string(out))
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	done := false
	restore = func() {
		if done {
			return
		}
		done = true
		if out, err := exec.Command("chattr", append([]string{"-i"}, files...)...).CombinedOutput(); err != nil {
			t.Errorf("storetest: chattr -i: %v: %s", err, out)
		}
	}
	t.Cleanup(restore)
	return restore
}
