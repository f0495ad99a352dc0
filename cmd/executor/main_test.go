package main

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/internal/proctest"
	"github.com/sandgate/sandgate/internal/seccomp"
)

// TestMain runs main instead of the tests when the test binary is re-run by
// runMain, so the tests drive the real process: dispatch, environment and
// exit code.
func TestMain(m *testing.M) {
	if os.Getenv("EXECUTOR_TEST_RUN_MAIN") == "1" {
		os.Args = append([]string{"executor"}, os.Args[1:]...)
		main()
	}
	proctest.Main(m) // no process or goroutine outlives the tests
}

func runMain(t *testing.T, url string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), os.Args[0], args...)
	cmd.Env = append(os.Environ(), "EXECUTOR_TEST_RUN_MAIN=1", "SANDGATE_URL="+url, "SANDGATE_API_TOKEN=tok")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), out.String(), errOut.String()
	}
	require.NoError(t, err)
	return 0, out.String(), errOut.String()
}

func TestMainDispatchesToTheCLI(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/v1/sessions":
			_, _ = w.Write([]byte(`{"sessions":[{"id":"s1","state":"running","gated":false}]}`))
		case "/v1/sessions/s1/exec":
			_, _ = w.Write([]byte(`{"stdout":"out\n","stderr":"err\n","exit_code":3,"timed_out":false,"truncated":false}`))
		default: // exec:stream too: an executor older than it, which the CLI falls back from
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error":{"code":"not_found","message":"no such endpoint"}}`))
		}
	}))
	t.Cleanup(srv.Close)

	code, stdout, stderr := runMain(t, srv.URL, "ls", "--json")
	require.Equal(t, 0, code, stderr)
	require.JSONEq(t, `{"sessions":[{"id":"s1","state":"running","gated":false}]}`, stdout)

	code, stdout, stderr = runMain(t, srv.URL, "exec", "s1", "--", "false")
	require.Equal(t, 3, code, "the process exits with the command's code")
	require.Equal(t, "out\n", stdout)
	require.Equal(t, "err\n", stderr)

	code, stdout, _ = runMain(t, srv.URL, "version")
	require.Equal(t, 0, code)
	require.Equal(t, "executor dev\n", stdout)

	code, stdout, _ = runMain(t, srv.URL, "seccomp-profile")
	require.Equal(t, 0, code)
	require.Equal(t, seccomp.Profile()+"\n", stdout)

	code, _, stderr = runMain(t, srv.URL, "nope")
	require.Equal(t, 2, code)
	require.Contains(t, stderr, `executor: unknown command "nope"`)
}
