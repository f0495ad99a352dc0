package sandbox

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestValidateProcStart(t *testing.T) {
	t.Parallel()
	for _, ok := range []ProcStart{
		{Command: "true"},
		{Command: "bash", TTY: true},
		{Command: "bash", TTY: true, Cols: 1, Rows: MaxTermSize},
		{Command: "x", RingBytes: MaxRingBytes, Tag: strings.Repeat("t", MaxProcTagBytes), Workdir: "/w"},
	} {
		require.NoError(t, ValidateProcStart(ok), "%+v", ok)
	}
	for _, bad := range []ProcStart{
		{Command: "a\x00b"},
		{Command: strings.Repeat("x", MaxCommandBytes+1)},
		{Command: "x", RingBytes: -1},
		{Command: "x", RingBytes: MaxRingBytes + 1},
		{Command: "x", Tag: strings.Repeat("t", MaxProcTagBytes+1)},
		{Command: "x", Workdir: "/a\x00"},
		{Command: "x", Cols: 80, Rows: 24},
		{Command: "x", TTY: true, Cols: 80},
		{Command: "x", TTY: true, Cols: MaxTermSize + 1, Rows: 1},
	} {
		require.ErrorIs(t, ValidateProcStart(bad), ErrInvalidProc, "%+v", bad)
	}
}

func TestValidateProcSignalAndID(t *testing.T) {
	t.Parallel()
	for _, s := range ProcSignals {
		require.NoError(t, ValidateProcSignal(s))
	}
	for _, s := range []string{"", "term", "SIGTERM", "9", "SEGV"} {
		require.ErrorIs(t, ValidateProcSignal(s), ErrInvalidProc, s)
	}
	for _, id := range []string{"a", "0f3c9ab1d2e4", strings.Repeat("z", 32)} {
		require.NoError(t, ValidateProcID(id))
	}
	for _, id := range []string{"", "ABC", "a-b", "a/b", "é", strings.Repeat("z", 33)} {
		require.ErrorIs(t, ValidateProcID(id), ErrInvalidProc, id)
	}
}
