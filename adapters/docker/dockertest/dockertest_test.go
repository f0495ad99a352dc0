package dockertest

import (
	"fmt"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// recorder is a testing.TB that records how a helper ended the test instead
// of ending the real one.
type recorder struct {
	testing.TB
	fatal, skip string
	cleanups    []func()
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (r *recorder) Skipf(format string, args ...any) {
	r.skip = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (r *recorder) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }

// record runs f on a recorder in its own goroutine, as the testing package
// runs a test, so Goexit ends only f; then it runs the registered cleanups.
func record(f func(tb testing.TB)) *recorder {
	r := &recorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
	return r
}

// Not parallel: the cases set CI and DOCKER_HOST for the whole process.
func TestClientWithoutEngine(t *testing.T) {
	noSocket := "unix://" + filepath.Join(t.TempDir(), "none.sock")
	for _, tc := range []struct {
		name, ci, host string
		fails          bool
		want           string
	}{
		{"CI=true fails", "true", noSocket, true, "no Docker engine answers"},
		{"CI=1 fails", "1", noSocket, true, "no Docker engine answers"},
		{"CI unset skips", "", noSocket, false, "no Docker engine answers"},
		{"CI=false skips", "false", noSocket, false, "no Docker engine answers"},
		{"bad DOCKER_HOST under CI fails", "true", "not-a-host-url", true, "docker client"},
		{"bad DOCKER_HOST skips", "", "not-a-host-url", false, "docker client"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("CI", tc.ci)
			t.Setenv("DOCKER_HOST", tc.host)
			r := record(func(tb testing.TB) {
				Client(tb)
				tb.Errorf("Client returned without ending the test")
			})
			got := r.skip
			if tc.fails {
				got = r.fatal
				require.Empty(t, r.skip)
			} else {
				require.Empty(t, r.fatal)
			}
			require.Contains(t, got, tc.want)
		})
	}
}
