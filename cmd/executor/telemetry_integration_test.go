//go:build integration

package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/fx"

	"github.com/sandgate/sandgate/adapters/docker"
	"github.com/sandgate/sandgate/internal/testworld"
	"github.com/sandgate/sandgate/ports"
)

// TestGateVerdictsOnMetrics runs the executor with the Docker provider and
// a real gate on a test network: a limited session's sandbox makes one
// allowed and one denied request through its gate, and both show up in
// sandgate_gate_verdicts_total on the executor's /metrics, reported by the
// gate to the executor's gate listener.
func TestGateVerdictsOnMetrics(t *testing.T) {
	env := testworld.New(t)
	gateImage := env.GateImage(t)

	// A free port on the network's gateway for the gate listener (the
	// control-plane URL must be known before the start).
	ln, err := net.Listen("tcp", net.JoinHostPort(env.Gateway.String(), "0"))
	require.NoError(t, err)
	gateListen := ln.Addr().String()
	require.NoError(t, ln.Close())

	cfg := testConfig(t, map[string]string{
		"SANDGATE_GATE_LISTEN":      gateListen,
		"SANDGATE_CONTROLPLANE_URL": "http://" + gateListen,
		"SANDGATE_GATE_NETWORK":     env.Network,
		"SANDGATE_GATE_IMAGE":       gateImage,
		"SANDGATE_IMAGE":            env.SandboxImage,
	})
	provider := fx.Module("provider", fx.Provide(func(store ports.SessionStore) ports.Provider {
		return docker.New(env.Cli, docker.Options{Labels: env.Labels, GateNetwork: env.Network, Tokens: store})
	}))
	base, _, logs := startedWith(t, cfg, provider)

	origin := env.Origin.IPv4.String()
	sid := "ses_verdicts" + strconv.FormatInt(time.Now().UnixNano()%1e9, 10)
	status, body := call(t, http.MethodPut, base+"/v1/sessions/"+sid, testToken,
		`{"networking":{"type":"limited","allowed_hosts":["`+origin+`"]}}`)
	require.Equal(t, http.StatusOK, status, "%s\nlogs:\n%s", body, logs.String())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodDelete, base+"/v1/sessions/"+sid, nil)
		req.Header.Set("Authorization", "Bearer "+testToken)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_ = resp.Body.Close()
		}
	})

	// One request to the allowed origin, one to a host the policy lacks,
	// both through the gate's proxy with bash alone.
	get := func(host string) string {
		return `exec 3<>/dev/tcp/127.0.0.1/15080 && printf 'GET http://` + host + `/ HTTP/1.1\r\nHost: ` + host +
			`\r\nConnection: close\r\n\r\n' >&3 && timeout 20 head -n 1 <&3`
	}
	for host, want := range map[string]string{origin: " 200 ", "denied.example:80": " 403 "} {
		status, body = call(t, http.MethodPost, base+"/v1/sessions/"+sid+"/exec", testToken,
			`{"command":"`+strings.ReplaceAll(strings.ReplaceAll(get(host), `\`, `\\`), `"`, `\"`)+`","timeout_ms":60000}`)
		require.Equal(t, http.StatusOK, status, body)
		require.Contains(t, body, want, "request to %s", host)
	}

	// The gate reports every few seconds; the executor's /metrics shows it.
	allowed := regexp.MustCompile(`sandgate_gate_verdicts_total\{[^}]*reason="opened",verdict="allowed"\} 1\b`)
	denied := regexp.MustCompile(`sandgate_gate_verdicts_total\{[^}]*reason="not-allowed",verdict="denied"\} 1\b`)
	var metrics string
	require.Eventually(t, func() bool {
		metrics = scrape(base)
		return allowed.MatchString(metrics) && denied.MatchString(metrics)
	}, 30*time.Second, 500*time.Millisecond, "verdicts never reached /metrics:\n%s\nlogs:\n%s", grepLines(metrics, "sandgate_"), logs.String())
	require.Regexp(t, `sandgate_provisions_total\{[^}]*outcome="ok"\} 1\b`, metrics)
	require.Regexp(t, `sandgate_exec_duration_seconds_count\{[^}]*outcome="ok"\} 2\b`, metrics)
}

// scrape returns the body of /metrics, or "" (it runs in Eventually's
// goroutine, where require must not be called).
func scrape(base string) string {
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		return ""
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func grepLines(s, substr string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
