//go:build !linux

package cli

import "os"

// isTerminal reports whether f is a character device: a terminal, or
// /dev/null, which only costs a progress bar nobody sees.
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
