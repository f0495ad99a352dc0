package sandbox

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// update rewrites the golden files under testdata instead of comparing
// against them: go test ./core/sandbox -run Golden -update.
var update = flag.Bool("update", false, "rewrite golden files under testdata")

// requireGolden compares got with testdata/NAME byte for byte, or writes it
// there under -update.
func requireGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	file := filepath.Join("testdata", filepath.FromSlash(name))
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(file), 0o755))
		require.NoError(t, os.WriteFile(file, got, 0o644))
		return
	}
	want, err := os.ReadFile(file)
	require.NoError(t, err, "golden file missing: run with -update")
	if !bytes.Equal(want, got) {
		i := 0
		for i < len(want) && i < len(got) && want[i] == got[i] {
			i++
		}
		t.Fatalf("%s differs at byte %d (golden %d bytes, got %d): rerun with -update if the change is intended",
			file, i, len(want), len(got))
	}
}
