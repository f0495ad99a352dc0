package cli

import (
	"bytes"
	"context"
	"errors"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/core/session"
	"github.com/sandgate/sandgate/ports"
)

// TestAPIErrorsAreExplained covers every error code the API answers with
// the message the CLI prints for it.
func TestAPIErrorsAreExplained(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		args []string
		want string
	}{
		{sandbox.ErrNotFound, []string{"exec", "s1", "--", "true"}, "executor exec: session s1 not found (create it with `executor create s1`)\n"},
		{sandbox.ErrSpecMismatch, []string{"create", "s1"}, "executor create: session s1 already runs with another image, workdir or network (remove it with `executor rm s1`, or create it with the same settings)\n"},
		{sandbox.ErrFileNotExist, []string{"cp", "s1:/a/b", "-"}, "executor cp: /a/b: no such file or directory in session s1\n"},
		{sandbox.ErrIsDirectory, []string{"cp", "s1:/a", "-"}, "executor cp: /a is a directory in session s1 (cp copies one file; `executor export s1 --root DIR` copies a tree)\n"},
		{sandbox.ErrNotDirectory, []string{"cp", "s1:/a/b", "-"}, "executor cp: /a/b: a parent of it is not a directory in session s1\n"},
		{sandbox.ErrNotRegularFile, []string{"cp", "s1:/dev/null", "-"}, "executor cp: /dev/null is not a regular file in session s1 (a device, socket, fifo or symlink)\n"},
		{sandbox.ErrNotReplaceable, []string{"cp", "s1:/a", "-"}, "executor cp: /a cannot be replaced in session s1 (a directory or a mount point is in the way)\n"},
		{sandbox.ErrNotWritable, []string{"cp", "s1:/a", "-"}, "executor cp: /a is not writable in session s1 (read-only location or permissions)\n"},
		{sandbox.ErrFileTooLarge, []string{"cp", "s1:/big", "-"}, "executor cp: /big is larger than the executor's transfer limit: file too large\n"},
		{session.ErrInvalidRequest, []string{"ls"}, "executor ls: the executor refused the request: invalid request\n"},
		{sandbox.ErrSizeNotALength, []string{"ls"}, "executor ls: the executor needs the upload's size up front: " + sandbox.ErrSizeNotALength.Error() + "\n"},
		{ports.ErrNotImplemented, []string{"rm", "s1"}, "executor rm: this executor does not do that yet: not implemented yet\n"},
		{errors.New("docker: boom with details"), []string{"rm", "s1"}, "executor rm: the executor failed (HTTP 500); its log has the cause\n"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			h.svc.Err = tc.err
			r := h.run(tc.args...)
			require.Equal(t, ExitFailure, r.code)
			require.Equal(t, tc.want, r.stderr)
			require.Empty(t, r.stdout)
		})
	}
}

func TestUnauthorized(t *testing.T) {
	t.Parallel()
	for _, token := range []string{"", "wrong"} {
		h := newHarness(t)
		h.env[EnvToken] = token
		r := h.run("ls")
		require.Equal(t, ExitFailure, r.code)
		require.Equal(t, "executor ls: unauthorized by the executor at "+h.url+": set $SANDGATE_API_TOKEN (or --token) to its API token\n", r.stderr)
	}
	// --token overrides the environment.
	h := newHarness(t)
	h.env[EnvToken] = "wrong"
	r := h.run("ls", "--token", testToken)
	require.Equal(t, 0, r.code, r.stderr)
}

func TestURLFlagAndUnreachableServer(t *testing.T) {
	t.Parallel()
	dead := httptest.NewServer(nil)
	deadURL := dead.URL
	dead.Close()
	h := newHarness(t)
	good := h.url
	h.env[EnvURL] = deadURL
	r := h.run("ls")
	require.Equal(t, ExitFailure, r.code)
	require.Contains(t, r.stderr, "executor ls: cannot reach the executor at "+deadURL+" (is `executor serve` running? set $SANDGATE_URL or --url): ")
	r = h.run("ls", "--url", good)
	require.Equal(t, 0, r.code, r.stderr)
	r = h.run("ls", "--url", "ftp://x")
	require.Equal(t, ExitUsage, r.code)
	require.Contains(t, r.stderr, "executor ls: --url / $SANDGATE_URL: api url")
}

func TestTopLevelUsage(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := h.run()
	require.Equal(t, ExitUsage, r.code)
	require.Contains(t, r.stderr, "usage: executor COMMAND [ARGS]")
	r = h.run("frobnicate")
	require.Equal(t, ExitUsage, r.code)
	require.Contains(t, r.stderr, "executor: unknown command \"frobnicate\"\n")
	r = h.run("help")
	require.Equal(t, ExitOK, r.code)
	r = h.run("rm", "-h")
	require.Equal(t, ExitOK, r.code)
	require.Contains(t, r.stderr, "usage: executor rm SESSION [--checkpoint]  or  rm [-r] SESSION:/path\n\nflags:\n")
	r = h.run("create", "--help")
	require.Equal(t, ExitOK, r.code)
	require.Contains(t, r.stderr, "\nA credential's secret is never a flag value: argv is readable by every local user\n")
}

func TestInterruptedCall(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	var out, errOut bytes.Buffer
	s := Streams{Stdout: &out, Stderr: &errOut, Getenv: func(k string) string { return h.env[k] }}
	require.Equal(t, ExitInterrupted, Run(ctx, []string{"exec", "s1", "--", "sleep", "1"}, s))
	require.Equal(t, "executor exec: interrupted\n", errOut.String())
	require.Empty(t, out.String())
}
