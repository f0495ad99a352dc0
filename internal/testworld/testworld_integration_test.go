//go:build integration

package testworld

import (
	"context"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestEnvOrigin checks the environment without a gate: from the host, the
// probe reaches every server of the origin, and the origin logs each.
func TestEnvOrigin(t *testing.T) {
	e := New(t)
	ip := e.Origin.IPv4.String()
	t.Logf("network %s (IPv6 %v), origin %s %s, control plane %s", e.Network, e.IPv6, e.Origin.IPv4, e.Origin.IPv6, e.ControlplaneURL)
	caFile := e.writeTemp(t, "origin-ca.pem", e.OriginCAPEM())
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"http", []string{"http", "--direct", "--header", "X-Mark: m1", "http://" + ip + "/env-http/"}, "status: 200"},
		{"https", []string{"http", "--direct", "--cafile", caFile, "https://" + ip + "/env-https"},
			"issuer: " + testCACommonName},
		{"tcp", []string{"tcp", net.JoinHostPort(ip, "7")}, "connected"},
		{"udp", []string{"udp", net.JoinHostPort(ip, "7")}, "reply: probe-udp"},
		{"dns udp", []string{"dns", "udp", net.JoinHostPort(ip, "53"), "q1.example"}, "answer: " + ip},
		{"dns tcp", []string{"dns", "tcp", net.JoinHostPort(ip, "53"), "q2.example"}, "answer: " + ip},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			out, err := exec.CommandContext(ctx, e.ProbePath, args...).CombinedOutput()
			require.NoError(t, err, "%s", out)
			require.Contains(t, string(out), tc.want)
		})
	}
	// The origin's Go server takes absolute-form requests, so it can stand
	// in for the proxy of the stream, upgrade and slowloris commands.
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"stream", []string{"stream", "http://" + ip + "/sse/x"}, "data: 3"},
		{"upgrade", []string{"upgrade", "http://" + ip + "/ws/x"}, "echo: probe-ws-message"},
		{"slowloris", []string{"slowloris", "--for", "20s", "http://" + ip + "/slow/x"}, "closed after 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, e.ProbePath, tc.args...)
			cmd.Env = append(os.Environ(), "HTTP_PROXY=http://"+ip+":80")
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s", out)
			require.Contains(t, string(out), tc.want)
		})
	}
	e.AwaitOriginRequests(t, "/env-http/", 1)
	log := e.OriginLog(t)
	kinds := map[string]int{}
	for _, r := range log {
		kinds[r.Kind]++
	}
	// The readiness dial of the echo port counts as one more tcp connection.
	require.Equal(t, map[string]int{"http": 3, "https": 1, "tcp": 2, "udp": 1, "dns-udp": 1, "dns-tcp": 1}, kinds,
		"%+v", log)
	http := e.OriginRequests(t, "/env-http/")
	require.Len(t, http, 1)
	require.Equal(t, []string{"m1"}, http[0].Headers["X-Mark"])
	require.True(t, strings.HasPrefix(http[0].URL, "/env-http/"))
}
