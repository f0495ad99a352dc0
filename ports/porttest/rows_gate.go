package porttest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/gatewire"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/ports"
)

// GatedHarness is what the gated rows (CONTRACT §9, B-1, B-2, B-8) need
// besides the provider: a control plane that knows the session's policy, an
// origin only the gate may reach, and the images and hooks below.
type GatedHarness struct {
	// Gate registers sid with the control plane as a limited session that
	// allows Origin (and nothing else) and returns the GateSpec to provision
	// it with.
	Gate func(t *testing.T, sid domain.ID) *sandbox.GateSpec
	// Tokens are that control plane's gate tokens. Harness.Provider must be
	// built with them; the rows that count mints and revokes wrap them
	// (Harness.WithTokens). Required.
	Tokens ports.GateTokenIssuer
	// Origin is "ip:port" of a plain HTTP origin the test started, which
	// answers GET / with 200 and a body containing OriginBody.
	Origin     string
	OriginBody string
	// GateUIDImage is an image whose USER is the gate uid (B-2).
	GateUIDImage string
	// StopGate stops the session's gate without removing it (B-8). Nil when
	// the backend's gate cannot be stopped alone (a Kubernetes sidecar).
	StopGate func(ctx context.Context, sid domain.ID) error
}

// gated provisions a gated sandbox for a fresh session.
func (s *suite) gated(t *testing.T) (sandbox.Spec, ports.Sandbox) {
	t.Helper()
	needCap(t, s.h.Gated != nil, "Gated", "no gate harness")
	spec := s.spec(t)
	spec.Gate = s.h.Gated.Gate(t, spec.SessionID)
	return spec, s.provision(t, spec)
}

// viaGate is a GET of http://Origin/ through the gate's proxy, written in
// bash alone (the base image has no HTTP client); it prints the response.
func viaGate(origin string) string {
	return fmt.Sprintf(`exec 3<>/dev/tcp/127.0.0.1/15080 && printf 'GET http://%[1]s/ HTTP/1.1\r\nHost: %[1]s\r\nConnection: close\r\n\r\n' >&3 && timeout 20 cat <&3`, origin)
}

// direct dials the origin without the proxy; it must fail.
func direct(origin string) string {
	host, port, _ := strings.Cut(origin, ":")
	return fmt.Sprintf(`timeout 10 bash -c 'exec 3<>/dev/tcp/%s/%s' 2>&1 && echo CONNECTED`, host, port)
}

// gateRows: gate pairing (CONTRACT §9) and the gate's guarantees the port
// can observe (B-1 trust, B-2, B-8).
func gateRows() []row {
	return []row{
		{"C-GATE-1/egress-only-through-gate", func(t *testing.T, s *suite) {
			_, sb := s.gated(t)
			out := sh(t, sb, viaGate(s.h.Gated.Origin))
			require.Contains(t, out, "200", "the gate admits the allowed origin")
			require.Contains(t, out, s.h.Gated.OriginBody)
			res := exec(t, sb, sandbox.ExecRequest{Command: direct(s.h.Gated.Origin)})
			require.NotContains(t, res.Stdout, "CONNECTED", "a direct dial bypasses the gate")
			require.NotEqual(t, 0, res.ExitCode)
		}},
		{"C-GATE-1/proxy-environment", func(t *testing.T, s *suite) {
			_, sb := s.gated(t)
			env := sh(t, sb, "env")
			for _, want := range []string{"HTTP_PROXY=" + gatewire.ProxyURL, "HTTPS_PROXY=" + gatewire.ProxyURL,
				"http_proxy=" + gatewire.ProxyURL, "https_proxy=" + gatewire.ProxyURL,
				"NODE_USE_ENV_PROXY=1", "SSL_CERT_FILE=" + gatewire.SandboxCABundle} {
				require.Contains(t, strings.Split(env, "\n"), want)
			}
			require.Contains(t, strings.Split(env, "\n"), "NO_PROXY=")
			require.NotContains(t, env, gatewire.TokenPrefix, "the gate token never enters the sandbox")
		}},
		{"C-GATE-2/adoption-mints-nothing", func(t *testing.T, s *suite) {
			spec, sb := s.gated(t)
			m := &recordingTokens{inner: s.h.Gated.Tokens}
			adopted, err := s.h.WithTokens(m).Provision(ctx(t), spec)
			require.NoError(t, err)
			require.Equal(t, sb.ID(), adopted.ID())
			require.Zero(t, m.generated.Load(), "no token generated on adoption")
			require.Zero(t, m.persisted.Load(), "no token persisted on adoption")
		}},
		{"C-GATE-2/create-mints-once", func(t *testing.T, s *suite) {
			needCap(t, s.h.Gated != nil, "Gated", "no gate harness")
			spec := s.spec(t)
			spec.Gate = s.h.Gated.Gate(t, spec.SessionID)
			m := &recordingTokens{inner: s.h.Gated.Tokens}
			sb, err := s.h.WithTokens(m).Provision(ctx(t), spec)
			require.NoError(t, err)
			require.NotNil(t, sb)
			require.Equal(t, int32(1), m.generated.Load())
			require.Equal(t, int32(1), m.persisted.Load())
		}},
		{"C-GATE-3/reshape-both-ways", func(t *testing.T, s *suite) {
			// A rebuilt sandbox is a new one: the marker written in the old
			// one is gone (a pod keeps its name, so IDs need not differ).
			const marker = "/tmp/sandgate-reshape-marker"
			spec, sb := s.gated(t)
			require.NoError(t, sb.WriteFile(ctx(t), marker, []byte("gated")))
			rev := &recordingTokens{inner: s.h.Gated.Tokens}
			ungated := spec
			ungated.Gate = nil
			open, err := s.h.WithTokens(rev).Provision(ctx(t), ungated)
			require.NoError(t, err)
			require.NotContains(t, sh(t, open, "cat "+marker+" 2>/dev/null || echo absent"), "gated", "rebuilt, not adopted")
			require.Equal(t, []domain.ID{spec.SessionID}, rev.calls(), "gated→ungated revokes first")
			require.NotContains(t, sh(t, open, "env"), "HTTP_PROXY=")
			require.NoError(t, open.WriteFile(ctx(t), marker, []byte("open")))
			regated := s.provision(t, spec)
			require.NotContains(t, sh(t, regated, "cat "+marker+" 2>/dev/null || echo absent"), "open", "rebuilt again")
			require.Contains(t, sh(t, regated, viaGate(s.h.Gated.Origin)), s.h.Gated.OriginBody)
		}},
		{"B-1/session-ca-trusted", func(t *testing.T, s *suite) {
			_, sb := s.gated(t)
			ca := readBack(t, sb, gatewire.SandboxCACert)
			require.Contains(t, string(ca), "BEGIN CERTIFICATE")
			// The image's own roots (none in a minimal image) with the CA
			// appended, never replaced by it.
			system := sh(t, sb, "cat "+gatewire.SystemCABundle+" 2>/dev/null || true")
			bundle := readBack(t, sb, gatewire.SandboxCABundle)
			require.Equal(t, string(sandbox.CABundle([]byte(system), ca)), string(bundle))
		}},
		{"B-2/gate-uid-image-refused", func(t *testing.T, s *suite) {
			needCap(t, s.h.Gated != nil && s.h.Gated.GateUIDImage != "", "Gated.GateUIDImage", "no gate-uid image")
			spec := s.spec(t)
			spec.Image = s.h.Gated.GateUIDImage
			spec.Gate = s.h.Gated.Gate(t, spec.SessionID)
			sb, err := s.h.Provider.Provision(ctx(t), spec)
			require.ErrorIs(t, err, sandbox.ErrGateUIDImage)
			requireNoHandle(t, sb, "provision")
			require.NotContains(t, s.owned(t), spec.SessionID, "nothing was created")
		}},
		{"B-8/stopped-gate-restarted-in-place", func(t *testing.T, s *suite) {
			needCap(t, s.h.Gated != nil && s.h.Gated.StopGate != nil, "Gated.StopGate", "the gate cannot be stopped alone")
			spec, sb := s.gated(t)
			require.NoError(t, sb.WriteFile(ctx(t), "/workspace/kept", []byte("work")))
			require.NoError(t, s.h.Gated.StopGate(ctx(t), spec.SessionID))
			again := s.provision(t, spec)
			require.Equal(t, sb.ID(), again.ID(), "the same sandbox")
			require.Equal(t, "work", string(readBack(t, again, "/workspace/kept")), "the workspace survives")
			require.Contains(t, sh(t, again, viaGate(s.h.Gated.Origin)), s.h.Gated.OriginBody, "egress works again")
		}},
	}
}
