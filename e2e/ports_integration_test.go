//go:build integration

package e2e_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/adapters/docker/dockertest"
	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/core/session"
)

// httpServer starts an HTTP server on the sandbox's 127.0.0.1:8000, in perl
// (debian has no python3; bash cannot listen): each request is answered
// "hello from the sandbox PATH". setsid takes it out of the exec's group,
// so it outlives the exec.
const httpServer = `setsid perl -MIO::Socket::INET -e '
my $s = IO::Socket::INET->new(LocalAddr => "127.0.0.1", LocalPort => 8000, Listen => 16, ReuseAddr => 1)
	or die "listen: $!";
open(my $f, ">", "/tmp/http-up") or die; close $f;
while (my $c = $s->accept) {
	my $line = <$c>; my ($path) = $line =~ m{^\S+ (\S+)};
	while (my $h = <$c>) { last if $h =~ /^\r?\n$/; }
	my $body = "hello from the sandbox $path\n";
	print $c "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\nContent-Length: " . length($body) .
		"\r\nConnection: close\r\n\r\n$body";
	close $c;
}' </dev/null >/dev/null 2>&1 &
for i in $(seq 100); do [ -e /tmp/http-up ] && exit 0; sleep 0.1; done; exit 1`

// TestPortForwardGatedSession: a server started in a limited, gated
// sandbox (whose only way out is its gate) is reached through
// `executor port-forward` and through the preview route with a signed URL
// that a browser (a cookie jar, no token) opens.
func TestPortForwardGatedSession(t *testing.T) {
	w := newWorld(t)
	dockertest.RequireImage(t, w.cli, gatedImage())
	netName, gw := w.gateNetwork(t)
	settings := gatedSettings(t, netName, gw)
	settings["SANDGATE_AGENT_IMAGE"] = dockertest.AgentImage(t, w.cli)
	p := w.start(t, "fwd", settings)
	c := p.client(t)
	ctx := ctxMinutes(t, 4)

	sid := domain.NewID("ses")
	info, err := c.Provision(ctx, sid, session.Request{
		Networking: domain.Networking{Type: domain.NetLimited, AllowedHosts: []string{"api.example.com"}}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Delete(context.WithoutCancel(ctx), sid, false) })
	require.True(t, info.Gated)
	res, err := c.Exec(ctx, sid, sandbox.ExecRequest{Command: httpServer, Timeout: time.Minute})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, res.Stderr)

	t.Run("port-forward", func(t *testing.T) {
		addr, stop := portForward(t, p, sid.String(), "0:8000")
		for _, path := range []string{"/one", "/two"} {
			body, status := get(t, http.DefaultClient, "http://"+addr+path)
			require.Equal(t, http.StatusOK, status)
			require.Equal(t, "hello from the sandbox "+path+"\n", body)
		}
		require.Equal(t, 0, stop(), "Ctrl-C ends a port-forward with success")
	})

	t.Run("signed-preview", func(t *testing.T) {
		signed, err := c.SignPortURL(ctx, sid, 8000, time.Minute)
		require.NoError(t, err)
		require.Equal(t, p.url+signed.Path, signed.URL)
		jar, err := cookiejar.New(nil)
		require.NoError(t, err)
		browser := &http.Client{Jar: jar}
		body, status := get(t, browser, signed.URL)
		require.Equal(t, http.StatusOK, status, body)
		require.Equal(t, "hello from the sandbox /\n", body, "the prefix and the signature stay out")
		page := p.url + "/v1/sessions/" + sid.String() + "/ports/8000/style.css"
		body, status = get(t, browser, page)
		require.Equal(t, http.StatusOK, status, "the cookie lets the page's own requests in: %s", body)
		require.Equal(t, "hello from the sandbox /style.css\n", body)
		_, status = get(t, http.DefaultClient, page)
		require.Equal(t, http.StatusUnauthorized, status, "no token, no signature")
	})
}

// portForward runs `executor port-forward SESSION ARG` against p and
// returns the address it listens on, and stop, which sends it SIGINT and
// returns its exit code.
func portForward(t *testing.T, p *proc, args ...string) (string, func() int) {
	t.Helper()
	cmd := exec.Command(executorBinary(t), append([]string{"port-forward"}, args...)...)
	cmd.Env = append(os.Environ(), "SANDGATE_URL="+p.url, "SANDGATE_API_TOKEN="+procToken)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	exited := make(chan int, 1)
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	go func() {
		_, _ = io.Copy(io.Discard, out)
		_ = cmd.Wait()
		exited <- cmd.ProcessState.ExitCode()
		close(exited)
	}()
	require.NoError(t, err, "port-forward printed nothing: %s", stderr.String())
	fields := strings.Fields(line)
	require.GreaterOrEqual(t, len(fields), 2, line)
	return fields[1], func() int {
		require.NoError(t, cmd.Process.Signal(os.Interrupt))
		select {
		case code := <-exited:
			return code
		case <-time.After(30 * time.Second):
			t.Fatal("port-forward outlived Ctrl-C by 30 s")
			return -1
		}
	}
}

func get(t *testing.T, c *http.Client, url string) (string, int) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	require.NoError(t, err)
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b), resp.StatusCode
}
